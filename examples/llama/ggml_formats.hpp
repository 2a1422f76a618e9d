// llama.cpp's KV-cache block formats (ggml's q8_0, q4_0, q5_0, q5_1, iq4_nl), written
// from the algorithm of ggml-quants.c's reference quantizers (quantize_row_*_ref) and
// byte-exact to them (tests/fixtures/make_ggml_blocks.py), with ggml's FP16 scale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace llama::ggml {

enum class Format { q8_0, q4_0, q5_0, q5_1, iq4_nl };

inline constexpr int kBlock = 32;                    // values per block, every format here
inline constexpr Format kFormats[] = {Format::q8_0, Format::q4_0, Format::q5_0, Format::q5_1, Format::iq4_nl};

std::size_t block_bytes(Format f);                   // 34, 18, 22, 24, 18
std::string_view name(Format f);                     // "q8_0", ...
std::optional<Format> parse_format(std::string_view name);

// n values (a multiple of kBlock) to n / kBlock blocks, and back.
void quantize_row(Format f, const float* x, int n, std::uint8_t* out);
void dequantize_row(Format f, const std::uint8_t* in, int n, float* out);

// IEEE half precision, rounding to nearest even (as ggml's GGML_FP32_TO_FP16).
std::uint16_t fp32_to_fp16(float x);
float fp16_to_fp32(std::uint16_t h);

}  // namespace llama::ggml
