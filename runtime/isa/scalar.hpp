// Building blocks of the generated scalar (portable C++) kernels.
//
// The generator unrolls every kernel over blocks of 8 coordinates, the portable
// target's "register"; each helper here does one block with a fixed 8-lane loop
// that compilers vectorize with whatever the baseline ISA offers.
#pragma once

#include <cstdint>

namespace tq::scalar {

inline void mul8(float* dst, const float* a, const float* b) {
    for (int k = 0; k < 8; ++k) dst[k] = a[k] * b[k];
}

inline void scale8(float* dst, const float* src, double s) {
    for (int k = 0; k < 8; ++k) dst[k] = static_cast<float>(src[k] * s);
}

// The canonical order of the double sums in encode (norm, least-squares scale),
// which every ISA reproduces so that all write the same bytes.  Coordinates come
// in blocks of 8; block j feeds chain j % 4, in which lane k sums the block's
// coordinate k in ascending block order.  Then lanes combine across chains as
// (c0 + c1) + (c2 + c3), and the 8 lanes as a tree.  Four chains keep the
// additions' latency from serializing the kernel.
struct Sum8 {
    double chain[4][8] = {};
    void add_products(int block, const float* a, const float* b) {
        for (int k = 0; k < 8; ++k) chain[block % 4][k] += static_cast<double>(a[k]) * b[k];
    }
    double total() const {
        double lane[8];
        for (int k = 0; k < 8; ++k) lane[k] = (chain[0][k] + chain[1][k]) + (chain[2][k] + chain[3][k]);
        return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    }
};

// dst = H_8 src, the first three butterfly stages (1, 2, 4 apart); dst may alias src.
inline void fwht8(float* dst, const float* src) {
    float a[8];
    for (int k = 0; k < 8; ++k) a[k] = src[k];
    for (int len = 1; len < 8; len <<= 1)
        for (int i = 0; i < 8; i += 2 * len)
            for (int j = i; j < i + len; ++j) {
                const float u = a[j], v = a[j + len];
                a[j] = u + v;
                a[j + len] = u - v;
            }
    for (int k = 0; k < 8; ++k) dst[k] = a[k];
}

// (a, b) <- (a + b, a - b) on 8 lanes.
inline void butterfly8(float* a, float* b) {
    for (int k = 0; k < 8; ++k) {
        const float u = a[k], v = b[k];
        a[k] = u + v;
        b[k] = u - v;
    }
}

// level[k] = number of boundaries <= u[k], by a branchless binary search over
// the 2^Bits - 1 ascending boundaries (Bits steps).
template <int Bits>
inline void bucketize8(uint8_t* level, const float* u, const float* boundaries) {
    for (int k = 0; k < 8; ++k) {
        unsigned idx = 0;
        for (unsigned step = 1u << (Bits - 1); step; step >>= 1)
            idx += static_cast<unsigned>(u[k] >= boundaries[idx + step - 1]) * step;
        level[k] = static_cast<uint8_t>(idx);
    }
}

// c[k] = centroids[level[k]] for one block.
inline void lookup8(float* c, const uint8_t* level, const float* centroids) {
    for (int k = 0; k < 8; ++k) c[k] = centroids[level[k]];
}

}  // namespace tq::scalar
