#include "dequantize.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace llama {
namespace {

float half_to_float(std::uint16_t h) {
    std::uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu;
    std::uint32_t bits;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);  // Inf, NaN
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {  // subnormal: normalize
        int shift = 0;
        while (!(mantissa & 0x400u)) {
            mantissa <<= 1;
            ++shift;
        }
        bits = sign | (static_cast<std::uint32_t>(113 - shift) << 23) | ((mantissa & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

std::uint16_t load16(const std::uint8_t* p) {
    std::uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

// Blocks of 32 weights.  q4_0: f16 d, 16 bytes of nibbles, w = (q - 8) d.
// q4_1: f16 d, f16 m, nibbles, w = q d + m.  Low nibbles hold weights 0..15,
// high nibbles 16..31.  q8_0: f16 d, 32 int8, w = q d.
void q4_0_block(const std::uint8_t* b, float* out) {
    float d = half_to_float(load16(b));
    for (int j = 0; j < 16; ++j) {
        out[j] = static_cast<float>((b[2 + j] & 0xf) - 8) * d;
        out[j + 16] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
    }
}

void q4_1_block(const std::uint8_t* b, float* out) {
    float d = half_to_float(load16(b)), m = half_to_float(load16(b + 2));
    for (int j = 0; j < 16; ++j) {
        out[j] = static_cast<float>(b[4 + j] & 0xf) * d + m;
        out[j + 16] = static_cast<float>(b[4 + j] >> 4) * d + m;
    }
}

void q8_0_block(const std::uint8_t* b, float* out) {
    float d = half_to_float(load16(b));
    for (int j = 0; j < 32; ++j) out[j] = static_cast<float>(static_cast<std::int8_t>(b[2 + j])) * d;
}

template <class Block>
void blocks(const std::uint8_t* in, std::size_t block_bytes, std::vector<float>& out, Block block) {
    for (std::size_t i = 0; i < out.size() / 32; ++i) block(in + i * block_bytes, out.data() + i * 32);
}

}  // namespace

std::vector<float> dequantize(const Tensor& t) {
    std::vector<float> out(static_cast<std::size_t>(t.elements()));
    switch (static_cast<TensorType>(t.type)) {
    case TensorType::f32: std::memcpy(out.data(), t.data, out.size() * 4); break;
    case TensorType::f16:
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = half_to_float(load16(t.data + 2 * i));
        break;
    case TensorType::q4_0: blocks(t.data, 18, out, q4_0_block); break;
    case TensorType::q4_1: blocks(t.data, 20, out, q4_1_block); break;
    case TensorType::q8_0: blocks(t.data, 34, out, q8_0_block); break;
    default: throw std::runtime_error(t.name + ": tensor type " + std::to_string(t.type) + " is not supported");
    }
    return out;
}

}  // namespace llama
