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

TEST_CASE("packing: encode writes pack(level of each normalized rotated coordinate)") {
    tq::test::for_each_variant([](const tq_bit_kernels& v, const tq_kernels& k, const std::vector<float>& signs) {
        const int d = v.head_dim;
        std::vector<std::uint8_t> code(v.code_bytes), levels(d);
        std::vector<float> u(d);
        for (int t = 0; t < 50; ++t) {
            const auto x = tq::test::gaussian(d, 1000 + t);
            float scale = 0;
            REQUIRE(v.encode(signs.data(), x.data(), TQ_SCALE_NORM, code.data(), &scale) == TQ_OK);
            // the same float arithmetic as the kernel: x / |x| in double, then rotate
            const double inv = 1 / std::sqrt(tq::test::dot(x, x));
            for (int i = 0; i < d; ++i) u[i] = static_cast<float>(x[i] * inv);
            k.rotate(signs.data(), u.data(), u.data());
            for (int i = 0; i < d; ++i) levels[i] = tq::test::reference_level(v, i, u[i]);
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
