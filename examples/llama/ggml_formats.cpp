#include "ggml_formats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

// Compiled with -ffp-contract=off (CMakeLists.txt): every product and sum rounds on its
// own, as in ggml's reference C, so that no fused multiply-add moves a code across a
// rounding boundary.
namespace llama::ggml {
namespace {

constexpr int kHalf = kBlock / 2;  // byte j of a nibble array holds codes j (low) and j + 16 (high)

// ggml's kvalues_iq4nl: IQ4_NL's 16 levels, non-uniform (denser near zero).
constexpr std::int8_t kIq4nlLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

void put_fp16(std::uint8_t* p, float x) {
    std::uint16_t h = fp32_to_fp16(x);
    p[0] = static_cast<std::uint8_t>(h);
    p[1] = static_cast<std::uint8_t>(h >> 8);
}

float get_fp16(const std::uint8_t* p) { return fp16_to_fp32(static_cast<std::uint16_t>(p[0] | p[1] << 8)); }

// The block's value of largest magnitude, with its sign; the first of equals.
float signed_absmax(const float* x) {
    float amax = 0, max = 0;
    for (int j = 0; j < kBlock; ++j) {
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

// Codes' low four bits into 16 bytes; the fifth bits into a little-endian uint32, bit j for code j.
void pack_nibbles(const std::uint8_t* codes, std::uint8_t* qs) {
    for (int j = 0; j < kHalf; ++j) qs[j] = static_cast<std::uint8_t>((codes[j] & 15) | (codes[j + kHalf] & 15) << 4);
}

void pack_fifth_bits(const std::uint8_t* codes, std::uint8_t* qh) {
    std::uint32_t bits = 0;
    for (int j = 0; j < kBlock; ++j) bits |= static_cast<std::uint32_t>(codes[j] >> 4 & 1) << j;
    for (int b = 0; b < 4; ++b) qh[b] = static_cast<std::uint8_t>(bits >> 8 * b);
}

void unpack_codes(const std::uint8_t* qs, const std::uint8_t* qh, int* codes) {  // qh null: 4-bit codes
    std::uint32_t bits = qh ? static_cast<std::uint32_t>(qh[0] | qh[1] << 8 | qh[2] << 16 | qh[3] << 24) : 0;
    for (int j = 0; j < kHalf; ++j) {
        codes[j] = (qs[j] & 15) | static_cast<int>(bits >> j & 1) << 4;
        codes[j + kHalf] = (qs[j] >> 4) | static_cast<int>(bits >> (j + kHalf) & 1) << 4;
    }
}

// Symmetric formats (q4_0, q5_0): d = -max / 2^(bits-1), so the largest magnitude maps to
// code 0; code = x/d + offset + 0.5 truncated toward zero (x/d is within ±offset), at most top.
void quantize_symmetric(const float* x, int offset, std::uint8_t* b, std::uint8_t* codes) {
    float d = signed_absmax(x) / static_cast<float>(-offset);
    float id = d != 0 ? 1.0f / d : 0.0f;
    put_fp16(b, d);
    for (int j = 0; j < kBlock; ++j)
        codes[j] = static_cast<std::uint8_t>(std::min(2 * offset - 1, static_cast<int>(x[j] * id + (static_cast<float>(offset) + 0.5f))));
}

void quantize_q4_0(const float* x, std::uint8_t* b) {  // d, qs[16]
    std::uint8_t codes[kBlock];
    quantize_symmetric(x, 8, b, codes);
    pack_nibbles(codes, b + 2);
}

void quantize_q5_0(const float* x, std::uint8_t* b) {  // d, qh[4], qs[16]
    std::uint8_t codes[kBlock];
    quantize_symmetric(x, 16, b, codes);
    pack_fifth_bits(codes, b + 2);
    pack_nibbles(codes, b + 6);
}

void quantize_q5_1(const float* x, std::uint8_t* b) {  // d, m, qh[4], qs[16]: x ≈ m + d·code
    float min = x[0], max = x[0];
    for (int j = 1; j < kBlock; ++j) {
        min = std::min(min, x[j]);
        max = std::max(max, x[j]);
    }
    float d = (max - min) / 31;
    float id = d != 0 ? 1.0f / d : 0.0f;
    put_fp16(b, d);
    put_fp16(b + 2, min);
    std::uint8_t codes[kBlock];
    for (int j = 0; j < kBlock; ++j) codes[j] = static_cast<std::uint8_t>((x[j] - min) * id + 0.5f);
    pack_fifth_bits(codes, b + 4);
    pack_nibbles(codes, b + 8);
}

void quantize_q8_0(const float* x, std::uint8_t* b) {  // d, qs[32] (int8): round half away from zero
    float amax = 0;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    float d = amax / 127;
    float id = d != 0 ? 1.0f / d : 0.0f;
    put_fp16(b, d);
    for (int j = 0; j < kBlock; ++j) b[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(x[j] * id)));
}

// The IQ4_NL level nearest v: level j once v reaches the midpoint of levels j-1 and j
// (compared doubled, exactly; a tie goes up).
int nearest_level(float v) {
    int i = 0;
    for (int step = 8; step > 0; step /= 2)
        if (v + v >= static_cast<float>(kIq4nlLevels[i + step - 1] + kIq4nlLevels[i + step])) i += step;
    return i;
}

// ggml's reference path (quantize_row_iq4_nl_ref, no scale search): put the largest
// magnitude on level -127, take each value's nearest level, then the least-squares scale
// for those levels with weights x².  d, qs[16] of level indices.
void quantize_iq4_nl(const float* x, std::uint8_t* b) {
    float max = signed_absmax(x), d = 0;
    std::uint8_t codes[kBlock] = {};
    if (std::fabs(max) >= 1e-15f) {
        float id = 1 / (max / kIq4nlLevels[0]);
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < kBlock; ++j) {
            codes[j] = static_cast<std::uint8_t>(nearest_level(id * x[j]));
            float q = kIq4nlLevels[codes[j]], w = x[j] * x[j];
            sumqx += w * q * x[j];
            sumq2 += w * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    }
    put_fp16(b, d);
    pack_nibbles(codes, b + 2);
}

void dequantize_block(Format f, const std::uint8_t* b, float* y) {
    int codes[kBlock];
    float d = get_fp16(b);
    switch (f) {
    case Format::q8_0:
        for (int j = 0; j < kBlock; ++j) y[j] = static_cast<float>(static_cast<std::int8_t>(b[2 + j])) * d;
        return;
    case Format::q4_0:
        unpack_codes(b + 2, nullptr, codes);
        for (int j = 0; j < kBlock; ++j) y[j] = static_cast<float>(codes[j] - 8) * d;
        return;
    case Format::q5_0:
        unpack_codes(b + 6, b + 2, codes);
        for (int j = 0; j < kBlock; ++j) y[j] = static_cast<float>(codes[j] - 16) * d;
        return;
    case Format::q5_1: {
        float m = get_fp16(b + 2);
        unpack_codes(b + 8, b + 4, codes);
        for (int j = 0; j < kBlock; ++j) y[j] = static_cast<float>(codes[j]) * d + m;
        return;
    }
    case Format::iq4_nl:
        unpack_codes(b + 2, nullptr, codes);
        for (int j = 0; j < kBlock; ++j) y[j] = d * kIq4nlLevels[codes[j]];
        return;
    }
}

void check_length(int n) {
    if (n < 0 || n % kBlock) throw std::invalid_argument("ggml formats: " + std::to_string(n) + " values is not a whole number of 32-value blocks");
}

}  // namespace

std::size_t block_bytes(Format f) {
    switch (f) {
    case Format::q8_0: return 34;
    case Format::q4_0: return 18;
    case Format::q5_0: return 22;
    case Format::q5_1: return 24;
    case Format::iq4_nl: return 18;
    }
    return 0;
}

std::string_view name(Format f) {
    switch (f) {
    case Format::q8_0: return "q8_0";
    case Format::q4_0: return "q4_0";
    case Format::q5_0: return "q5_0";
    case Format::q5_1: return "q5_1";
    case Format::iq4_nl: return "iq4_nl";
    }
    return "?";
}

std::optional<Format> parse_format(std::string_view s) {
    for (Format f : kFormats)
        if (name(f) == s) return f;
    return std::nullopt;
}

void quantize_row(Format f, const float* x, int n, std::uint8_t* out) {
    check_length(n);
    void (*block)(const float*, std::uint8_t*) = f == Format::q8_0   ? quantize_q8_0
                                                 : f == Format::q4_0 ? quantize_q4_0
                                                 : f == Format::q5_0 ? quantize_q5_0
                                                 : f == Format::q5_1 ? quantize_q5_1
                                                                     : quantize_iq4_nl;
    for (int i = 0; i < n / kBlock; ++i) block(x + i * kBlock, out + i * block_bytes(f));
}

void dequantize_row(Format f, const std::uint8_t* in, int n, float* out) {
    check_length(n);
    for (int i = 0; i < n / kBlock; ++i) dequantize_block(f, in + i * block_bytes(f), out + i * kBlock);
}

std::uint16_t fp32_to_fp16(float x) {
    std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
    auto sign = static_cast<std::uint16_t>(bits >> 16 & 0x8000);
    std::uint32_t abs = bits & 0x7fffffff;
    if (abs > 0x7f800000) return static_cast<std::uint16_t>(sign | 0x7e00);  // NaN: a quiet one
    if (abs >= 0x477ff000) return static_cast<std::uint16_t>(sign | 0x7c00);  // >= 65520 rounds to infinity
    std::uint32_t h, rest, half;
    if (abs >= 0x38800000) {  // a normal half: rebias the exponent (127 -> 15), keep 10 of 23 mantissa bits
        h = (abs - 0x38000000) >> 13;
        rest = abs & 0x1fff;
        half = 0x1000;
    } else {  // a subnormal half (or zero): units of 2^-24
        int shift = 126 - static_cast<int>(abs >> 23);  // >= 14
        if (shift > 24) return sign;  // below 2^-25: zero (no tie is possible there)
        std::uint32_t mantissa = (abs & 0x7fffff) | 0x800000;
        h = mantissa >> shift;
        rest = mantissa & ((1u << shift) - 1);
        half = 1u << (shift - 1);
    }
    if (rest > half || (rest == half && (h & 1))) ++h;  // to nearest, ties to even (a carry may make the next exponent)
    return static_cast<std::uint16_t>(sign | h);
}

float fp16_to_fp32(std::uint16_t h) {
    std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16, exponent = h >> 10 & 31, mantissa = h & 0x3ff;
    if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000 | mantissa << 13);
    if (exponent == 0) {  // zero or subnormal: mantissa · 2^-24, exact in float
        float v = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -v : v;
    }
    return std::bit_cast<float>(sign | (exponent + 112) << 23 | mantissa << 13);
}

}  // namespace llama::ggml
