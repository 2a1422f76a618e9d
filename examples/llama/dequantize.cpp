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

// q5_0: f16 d, 4 bytes qh (a little-endian uint32: bit j is the fifth bit of weight j),
// 16 bytes of nibbles as in q4_0; w = (q - 16) d.
void q5_0_block(const std::uint8_t* b, float* out) {
    float d = half_to_float(load16(b));
    std::uint32_t qh = static_cast<std::uint32_t>(b[2]) | static_cast<std::uint32_t>(b[3]) << 8 |
                       static_cast<std::uint32_t>(b[4]) << 16 | static_cast<std::uint32_t>(b[5]) << 24;
    for (int j = 0; j < 16; ++j) {
        int lo = (b[6 + j] & 0xf) | static_cast<int>((qh >> j) & 1) << 4;
        int hi = (b[6 + j] >> 4) | static_cast<int>((qh >> (j + 16)) & 1) << 4;
        out[j] = static_cast<float>(lo - 16) * d;
        out[j + 16] = static_cast<float>(hi - 16) * d;
    }
}

// The k-quants: super-blocks of 256 weights, as ggml defines them (block_q4_K and
// block_q6_K in ggml-common.h; the format is described in llama.cpp's PR 1684).
//
// q4_K, 144 bytes: f16 d, f16 dmin, 12 bytes packing eight 6-bit scales s and eight
// 6-bit mins m (sub-blocks 0..3: the low 6 bits of bytes 0..3 and 4..7; sub-blocks 4..7:
// the low nibble (s) or high nibble (m) of bytes 8..11, with the top 2 bits of bytes
// 0..3 (s) or 4..7 (m) above it), then 128 bytes of nibbles.  Each 64 weights take 32
// bytes: weights 0..31 the low nibbles (sub-block 2i), 32..63 the high (2i+1);
// w = d s q - dmin m.
void q4_k_block(const std::uint8_t* b, float* out) {
    float d = half_to_float(load16(b)), dmin = half_to_float(load16(b + 2));
    const std::uint8_t* sm = b + 4;
    const std::uint8_t* q = b + 16;
    auto scale_min = [sm](int j, int& s, int& m) {
        if (j < 4) {
            s = sm[j] & 63;
            m = sm[j + 4] & 63;
        } else {
            s = (sm[j + 4] & 0xf) | (sm[j - 4] >> 6) << 4;
            m = (sm[j + 4] >> 4) | (sm[j] >> 6) << 4;
        }
    };
    for (int i = 0; i < 4; ++i, q += 32, out += 64) {
        int s0, m0, s1, m1;
        scale_min(2 * i, s0, m0);
        scale_min(2 * i + 1, s1, m1);
        float d0 = d * static_cast<float>(s0), d1 = d * static_cast<float>(s1);
        float o0 = dmin * static_cast<float>(m0), o1 = dmin * static_cast<float>(m1);
        for (int l = 0; l < 32; ++l) {
            out[l] = d0 * static_cast<float>(q[l] & 0xf) - o0;
            out[l + 32] = d1 * static_cast<float>(q[l] >> 4) - o1;
        }
    }
}

// q6_K, 210 bytes: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales
// (one per 16 weights), f16 d.  Each half of 128 weights takes 64 bytes of ql and 32 of
// qh: for l < 32, weights l, l+32, l+64, l+96 are the low nibbles of ql[l], ql[l+32],
// then their high nibbles, with bits 0-1, 2-3, 4-5, 6-7 of qh[l] on top; w = d s (q - 32).
void q6_k_block(const std::uint8_t* b, float* out) {
    const std::uint8_t* ql = b;
    const std::uint8_t* qh = b + 128;
    const auto* sc = reinterpret_cast<const std::int8_t*>(b + 192);
    float d = half_to_float(load16(b + 208));
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, out += 128) {
        for (int l = 0; l < 32; ++l) {
            int is = l / 16;
            int q1 = ((ql[l] & 0xf) | ((qh[l] >> 0) & 3) << 4) - 32;
            int q2 = ((ql[l + 32] & 0xf) | ((qh[l] >> 2) & 3) << 4) - 32;
            int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
            int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
            out[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
            out[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
            out[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
            out[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
        }
    }
}

template <class Block>
void blocks(const std::uint8_t* in, std::size_t block_bytes, std::size_t block_elements, std::vector<float>& out,
            Block block) {
    for (std::size_t i = 0; i < out.size() / block_elements; ++i)
        block(in + i * block_bytes, out.data() + i * block_elements);
}

}  // namespace

std::vector<float> dequantize(const Tensor& t) {
    std::vector<float> out(static_cast<std::size_t>(t.elements()));
    switch (static_cast<TensorType>(t.type)) {
    case TensorType::f32: std::memcpy(out.data(), t.data, out.size() * 4); break;
    case TensorType::f16:
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = half_to_float(load16(t.data + 2 * i));
        break;
    case TensorType::q4_0: blocks(t.data, 18, 32, out, q4_0_block); break;
    case TensorType::q4_1: blocks(t.data, 20, 32, out, q4_1_block); break;
    case TensorType::q5_0: blocks(t.data, 22, 32, out, q5_0_block); break;
    case TensorType::q8_0: blocks(t.data, 34, 32, out, q8_0_block); break;
    case TensorType::q4_k: blocks(t.data, 144, 256, out, q4_k_block); break;
    case TensorType::q6_k: blocks(t.data, 210, 256, out, q6_k_block); break;
    default: throw std::runtime_error(t.name + ": tensor type " + std::to_string(t.type) + " is not supported");
    }
    return out;
}

}  // namespace llama
