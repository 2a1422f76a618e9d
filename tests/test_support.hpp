// Helpers shared by the kernel tests: random data, small linear algebra, and an
// independent implementation of the packed layout (docs/packed-format.md).
#pragma once

#include "turboquant/registry.hpp"

#include <doctest/doctest.h>

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

// Written from the format description, not from the generator: plane p of
// width w is n = d*w/8 bytes; field k of its byte j holds coordinate k*n + j.
inline std::vector<std::uint8_t> reference_pack(int d, int bits, std::span<const std::uint8_t> levels) {
    std::vector<std::uint8_t> out(d * bits / 8, 0);
    int offset = 0, shift = 0;
    for (int w : plane_widths(bits)) {
        const int n = d * w / 8;
        for (int i = 0; i < d; ++i) {
            const int k = i / n, j = i % n;
            const int field = (levels[i] >> shift) & ((1 << w) - 1);
            out[offset + j] = static_cast<std::uint8_t>(out[offset + j] | (field << (k * w)));
        }
        offset += n;
        shift += w;
    }
    return out;
}

// Level of u: the number of boundaries <= u.
inline std::uint8_t reference_level(const tq_bit_kernels& v, float u) {
    const int levels = 1 << v.bits;
    int count = 0;
    for (int i = 0; i < levels - 1; ++i) count += v.boundaries[i] <= u;
    return static_cast<std::uint8_t>(count);
}

// Runs body(variant, kernel table, rotation signs) for every compiled (head_dim,
// bits) of the active ISA, with both captured for failure messages.
template <class Body>
void for_each_variant(Body body) {
    for (const tq_bit_kernels& v : tq::variants()) {
        CAPTURE(v.head_dim);
        CAPTURE(v.bits);
        body(v, tq::find(v.head_dim, v.bits, v.bits), tq::rotation_signs(v.head_dim, kSeed));
    }
}

}  // namespace tq::test
