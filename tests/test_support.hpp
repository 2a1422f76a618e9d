// Helpers shared by the kernel tests: random data, small linear algebra, and an
// independent implementation of the packed layout (docs/packed-format.md).
#pragma once

#include "turboquant/registry.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace tq::test {

inline constexpr std::uint64_t kSeed = 0x5eed;

inline std::vector<float> gaussian(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> v(n);
    for (auto& x : v) x = normal(rng);
    return v;
}

inline double dot(std::span<const float> a, std::span<const float> b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
    return s;
}

inline double squared_distance(std::span<const float> a, std::span<const float> b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    return s;
}

// How far float rounding in decode can move a relative squared error e: each
// output is a float sum of at most 64 terms (the FWHT's log2 d, a dense Hadamard
// stage's m <= 28), off by r <= 64 ulp relative, which moves |e + r|^2 by up to
// 2 |e| |r|.
inline double decode_rounding(double relative_squared_error) {
    return 2 * std::sqrt(relative_squared_error) * 64 * 0x1p-24;
}

// Planes of the layout, low level bits first: widths per bit count.
inline std::vector<int> plane_widths(int bits) {
    switch (bits) {
        case 3: return {2, 1};
        case 5: return {4, 1};
        case 6: return {4, 2};
        case 7: return {4, 2, 1};
        default: return {bits};
    }
}

// A variant's coordinate i: its bits, centroids and boundaries (the high-rate
// codebook for the first high_coords coordinates of a fractional rate).
inline int coord_bits(const tq_bit_kernels& v, int i) { return i < v.high_coords ? v.bits + 1 : v.bits; }
inline const float* coord_centroids(const tq_bit_kernels& v, int i) {
    return i < v.high_coords ? v.high_centroids : v.centroids;
}
inline const float* coord_boundaries(const tq_bit_kernels& v, int i) {
    return i < v.high_coords ? v.high_boundaries : v.boundaries;
}

// Written from the format description, not from the generator: a segment of n
// coordinates at b bits is packed as its own vector, segments one after the
// other; plane p of width w is n*w/8 bytes; field k of its byte j holds the
// segment's coordinate k*(n*w/8) + j.
inline std::vector<std::uint8_t> reference_pack(const tq_bit_kernels& v, std::span<const std::uint8_t> levels) {
    const int d = v.head_dim;
    std::vector<std::uint8_t> out(v.code_bytes, 0);
    int offset = 0;
    for (auto [first, count, bits] : {std::array{0, v.high_coords, v.bits + 1}, std::array{v.high_coords, d - v.high_coords, v.bits}}) {
        int shift = 0;
        for (int w : plane_widths(bits)) {
            const int n = count * w / 8;
            for (int i = 0; i < count; ++i) {
                const int k = i / n, j = i % n;
                const int field = (levels[first + i] >> shift) & ((1 << w) - 1);
                out[offset + j] = static_cast<std::uint8_t>(out[offset + j] | (field << (k * w)));
            }
            offset += n;
            shift += w;
        }
    }
    return out;
}

// Level of coordinate i's value u: the number of its boundaries <= u.
inline std::uint8_t reference_level(const tq_bit_kernels& v, int i, float u) {
    const int levels = 1 << coord_bits(v, i);
    int count = 0;
    for (int b = 0; b < levels - 1; ++b) count += coord_boundaries(v, i)[b] <= u;
    return static_cast<std::uint8_t>(count);
}

// Runs body(variant, kernel table, rotation signs) for every compiled (head_dim,
// bit rate) of the active ISA, with both captured for failure messages.
template <class Body>
void for_each_variant(Body body) {
    for (const tq_bit_kernels& v : tq::variants()) {
        CAPTURE(v.head_dim);
        CAPTURE(v.rate_eighths);
        body(v, tq::find(v.head_dim, tq::rate(v), tq::rate(v)), tq::rotation_signs(v.head_dim, kSeed));
    }
}

}  // namespace tq::test
