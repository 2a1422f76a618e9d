// The packed layout: every level at every position, against an independent
// packer, through pack/unpack, encode, and the fused kernels' unpacking.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>

TEST_CASE("packing: every level at every position round-trips, in the documented layout") {
    for (const tq_bit_kernels& v : tq::variants()) {
        const int d = v.head_dim, L = 1 << (v.bits + (v.high_coords > 0));
        CAPTURE(d);
        CAPTURE(v.rate_eighths);
        REQUIRE(v.code_bytes == std::size_t(d) * v.rate_eighths / 64);
        REQUIRE(v.high_coords == d * (v.rate_eighths % 8) / 8);
        std::vector<std::uint8_t> levels(d), unpacked(d), code(v.code_bytes);
        std::vector<float> acc(d);
        const float one = 1.0f;
        for (int shift = 0; shift < L; ++shift) {  // position i holds (i + shift) mod L
            for (int i = 0; i < d; ++i)
                levels[i] = static_cast<std::uint8_t>((i + shift) % L % (1 << tq::test::coord_bits(v, i)));
            v.pack(levels.data(), code.data());
            CHECK(code == tq::test::reference_pack(v, levels));
            v.unpack(code.data(), unpacked.data());
            CHECK(unpacked == levels);
            // score and accumulate read the same layout: with weight 1 and scale 1,
            // accumulate into zero gives the centroids themselves.
            std::fill(acc.begin(), acc.end(), 0.0f);
            v.accumulate(&one, 1, 1, code.data(), &one, 1, acc.data(), acc.size());
            for (int i = 0; i < d; ++i) REQUIRE(acc[i] == tq::test::coord_centroids(v, i)[levels[i]]);
        }
    }
}

namespace {

// The documented definition (docs/packed-format.md, "Levels"), written from the text
// alone: the sum of squares in the canonical float order (this file is compiled with
// -ffp-contract=off, as the kernels are, so each product rounds before it adds) ...
float canonical_squares(const std::vector<float>& x) {
    float chain[4][8] = {};
    for (std::size_t i = 0; i < x.size(); ++i) chain[(i / 8) % 4][i % 8] += x[i] * x[i];
    float lane[8];
    for (int k = 0; k < 8; ++k) lane[k] = (chain[0][k] + chain[1][k]) + (chain[2][k] + chain[3][k]);
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// ... and the level from |u| and the sign: 2^(b-1) + j or 2^(b-1) - 1 - j, j the number
// of positive boundaries <= |u|.
std::uint8_t documented_level(const tq_bit_kernels& v, int i, float u) {
    const int half = 1 << (tq::test::coord_bits(v, i) - 1);
    int j = 0;
    for (int b = half; b < 2 * half - 1; ++b) j += tq::test::coord_boundaries(v, i)[b] <= std::abs(u);
    return static_cast<std::uint8_t>(u >= 0 ? half + j : half - 1 - j);
}

}  // namespace

TEST_CASE("packing: encode writes pack(level of each normalized rotated coordinate)") {
    tq::test::for_each_variant([](const tq_bit_kernels& v, const tq_kernels& k, const std::vector<float>& signs) {
        const int d = v.head_dim;
        std::vector<std::uint8_t> code(v.code_bytes), levels(d);
        std::vector<float> u(d);
        for (int t = 0; t < 50; ++t) {
            const auto x = tq::test::gaussian(d, 1000 + t);
            float scale = 0;
            REQUIRE(v.encode(signs.data(), x.data(), TQ_SCALE_NORM, code.data(), &scale) == TQ_OK);
            const float norm = std::sqrt(canonical_squares(x));
            CHECK(scale == norm);
            k.rotate(signs.data(), x.data(), u.data());  // rotate, then normalize
            const float w = 1 / norm;
            for (int i = 0; i < d; ++i) levels[i] = documented_level(v, i, u[i] * w);
            CHECK(code == tq::test::reference_pack(v, levels));
        }
    });
}

TEST_CASE("packing: bits above the width in a bad level do not spill into neighbours") {
    for (const tq_bit_kernels& v : tq::variants()) {
        if (v.bits == 8) continue;
        CAPTURE(v.head_dim);
        CAPTURE(v.rate_eighths);
        for (int bad : {0, v.head_dim - 1}) {  // in each segment
            std::vector<std::uint8_t> levels(v.head_dim, 0), code(v.code_bytes), unpacked(v.head_dim);
            levels[bad] = 0xFF;  // only the coordinate's low bits may land in the code
            v.pack(levels.data(), code.data());
            v.unpack(code.data(), unpacked.data());
            CHECK(unpacked[bad] == (1 << tq::test::coord_bits(v, bad)) - 1);
            for (int i = 0; i < v.head_dim; ++i)
                if (i != bad) REQUIRE(unpacked[i] == 0);
        }
    }
}
