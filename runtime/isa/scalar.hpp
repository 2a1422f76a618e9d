// Building blocks of the generated scalar (portable C++) kernels.
//
// The generator unrolls every kernel over blocks of 8 coordinates, the portable
// target's "register"; each helper here does one block with a fixed 8-lane loop
// that compilers vectorize with whatever the baseline ISA offers.
#pragma once

#include <cmath>
#include <cstdint>

namespace tq::scalar {

inline void mul8(float* dst, const float* a, const float* b) {
    for (int k = 0; k < 8; ++k) dst[k] = a[k] * b[k];
}

inline void scale8(float* dst, const float* src, float s) {
    for (int k = 0; k < 8; ++k) dst[k] = src[k] * s;
}

// The canonical order of the float sums in encode (norm, least-squares scale),
// which every ISA reproduces so that all write the same bytes.  Coordinates come
// in blocks of 8; block j feeds chain j % 4, in which lane k adds the product of
// the block's coordinate k (rounded to float: no fused multiply-add) in ascending
// block order.  Then lanes combine across chains as (c0 + c1) + (c2 + c3), and the
// 8 lanes as a tree.  Four chains keep the additions' latency from serializing
// the kernel.
struct Sum8 {
    float chain[4][8] = {};
    void add_products(int block, const float* a, const float* b) {
        for (int k = 0; k < 8; ++k) chain[block % 4][k] += a[k] * b[k];
    }
    float total() const {
        float lane[8];
        for (int k = 0; k < 8; ++k) lane[k] = (chain[0][k] + chain[1][k]) + (chain[2][k] + chain[3][k]);
        return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    }
};

// dst = H_8 src, the first three butterfly stages (1, 2, 4 apart), written out
// so that the block stays in registers; dst may alias src.
inline void fwht8(float* dst, const float* src) {
    const float a0 = src[0] + src[1], a1 = src[0] - src[1], a2 = src[2] + src[3], a3 = src[2] - src[3];
    const float a4 = src[4] + src[5], a5 = src[4] - src[5], a6 = src[6] + src[7], a7 = src[6] - src[7];
    const float b0 = a0 + a2, b2 = a0 - a2, b1 = a1 + a3, b3 = a1 - a3;
    const float b4 = a4 + a6, b6 = a4 - a6, b5 = a5 + a7, b7 = a5 - a7;
    dst[0] = b0 + b4;
    dst[4] = b0 - b4;
    dst[1] = b1 + b5;
    dst[5] = b1 - b5;
    dst[2] = b2 + b6;
    dst[6] = b2 - b6;
    dst[3] = b3 + b7;
    dst[7] = b3 - b7;
}

// The butterfly stages 1, .., P/2 apart inside each block of P < 8 lanes (the
// 2^k axis of a head dim m * 2^k with 2^k < 8), in fwht8's order; dst may alias src.
template <int P>
inline void fwht_blocks8(float* dst, const float* src) {
    float v[8];
    for (int k = 0; k < 8; ++k) v[k] = src[k];
    for (int len = 1; len < P; len *= 2)
        for (int k = 0; k < 8; ++k)
            if (!(k & len)) {
                const float u = v[k], w = v[k + len];
                v[k] = u + w;
                v[k + len] = u - w;
            }
    for (int k = 0; k < 8; ++k) dst[k] = v[k];
}

// (a, b) <- (a + b, a - b) on 8 lanes.
inline void butterfly8(float* a, float* b) {
    for (int k = 0; k < 8; ++k) {
        const float u = a[k], v = b[k];
        a[k] = u + v;
        b[k] = u - v;
    }
}

// The levels of one block by magnitude (docs/packed-format.md): j = the number of
// positive boundaries <= |u| (a branchless binary search over the padded table's
// upper half, Bits - 1 steps), then level 2^(Bits-1) + j where u >= 0 (-0 too) and
// 2^(Bits-1) - 1 - j below: the mirror image of a codebook symmetric about 0.
// a[k] = |u[k]|.
template <int Bits>
inline void quantize8(uint8_t* level, float* a, const float* u, const float* boundary_table) {
    constexpr unsigned half = 1u << (Bits - 1);
    const float* positive = boundary_table + half;
    for (int k = 0; k < 8; ++k) {
        a[k] = std::fabs(u[k]);
        unsigned j = 0;
        for (unsigned step = half / 2; step; step >>= 1)
            j += static_cast<unsigned>(a[k] >= positive[j + step - 1]) * step;
        level[k] = static_cast<uint8_t>(u[k] >= 0 ? half + j : half - 1 - j);
    }
}

// m[k] = |centroids[level[k]]| for one block: the magnitude the level stands for.
inline void magnitude8(float* m, const uint8_t* level, const float* centroids) {
    for (int k = 0; k < 8; ++k) m[k] = std::fabs(centroids[level[k]]);
}

}  // namespace tq::scalar
