// Inputs at the edges: zero, constant, one-hot, extreme magnitudes, NaN/Inf.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <algorithm>
#include <limits>

namespace {

struct Fixture {
    const tq_bit_kernels& v;
    std::vector<float> signs;
    std::vector<std::uint8_t> code;
    std::vector<float> out;
    float scale = 0;
    int kind = TQ_SCALE_NORM;
    explicit Fixture(const tq_bit_kernels& variant)
        : v(variant), signs(tq::rotation_signs(variant.head_dim, tq::test::kSeed)),
          code(variant.code_bytes), out(variant.head_dim) {}
    int encode(const std::vector<float>& x) { return v.encode(signs.data(), x.data(), kind, code.data(), &scale); }
    void decode() { v.decode(signs.data(), code.data(), scale, out.data()); }
    double relative_error(const std::vector<float>& x) {
        return tq::test::squared_distance(x, out) / tq::test::dot(x, x);
    }
};

bool all_finite(const std::vector<float>& x) {
    for (float e : x)
        if (!std::isfinite(e)) return false;
    return true;
}

}  // namespace

TEST_CASE("edge: the zero vector encodes to scale 0 and decodes to zeros") {
    for (const tq_bit_kernels& v : tq::variants()) {
        CAPTURE(v.head_dim);
        CAPTURE(v.rate_eighths);
        Fixture f(v);
        REQUIRE(f.encode(std::vector<float>(v.head_dim, 0.0f)) == TQ_OK);
        CHECK(f.scale == 0.0f);
        f.decode();
        for (float e : f.out) CHECK(e == 0.0f);
    }
}

TEST_CASE("edge: a one-hot vector's error is exactly the quantization of +-1/sqrt(d)") {
    // R e_j = +-(column j of H)/sqrt(d): every coordinate is +-1/sqrt(d), so the
    // error is d * (1/sqrt(d) - c*)^2 with c* the centroid nearest 1/sqrt(d).
    for (const tq_bit_kernels& v : tq::variants()) {
        const int d = v.head_dim;
        CAPTURE(d);
        CAPTURE(v.rate_eighths);
        const float t = static_cast<float>(1 / std::sqrt(double(d)));
        double expected = 0;
        for (int i = 0; i < d; ++i) {
            const double c = tq::test::coord_centroids(v, i)[tq::test::reference_level(v, i, t)];
            expected += (t - c) * (t - c);
        }
        const double rounding = tq::test::decode_rounding(expected);
        Fixture f(v);
        for (int j : {0, d / 2 + 1, d - 1}) {
            std::vector<float> x(d, 0.0f);
            x[j] = -3.5f;
            REQUIRE(f.encode(x) == TQ_OK);
            f.decode();
            CHECK(std::abs(f.relative_error(x) - expected) <= 1e-3 * expected + rounding);
        }
    }
}

TEST_CASE("edge: constant vectors and extreme magnitudes are scale-invariant") {
    for (const tq_bit_kernels& v : tq::variants()) {
        const int d = v.head_dim;
        CAPTURE(d);
        CAPTURE(v.rate_eighths);
        Fixture f(v);
        // constant: rotated by random signs it is an ordinary vector; its error
        // stays within a few times the average distortion
        REQUIRE(f.encode(std::vector<float>(d, 2.5f)) == TQ_OK);
        f.decode();
        CHECK(f.relative_error(std::vector<float>(d, 2.5f)) < 4 * v.mse_unit_vector);

        const auto base = tq::test::gaussian(d, 11);
        REQUIRE(f.encode(base) == TQ_OK);
        const auto base_code = f.code;
        const float base_scale = f.scale;
        for (float magnitude : {1e-30f, 1e30f, 1e-36f, 1e34f}) {
            CAPTURE(magnitude);
            std::vector<float> x(d);
            for (int i = 0; i < d; ++i) x[i] = base[i] * magnitude;
            REQUIRE(f.encode(x) == TQ_OK);
            CHECK(f.scale / magnitude == doctest::Approx(base_scale).epsilon(1e-5));
            f.decode();
            CHECK(all_finite(f.out));
            CHECK(f.relative_error(x) < 4 * v.mse_unit_vector);
            // codes may differ only where rounding moved a coordinate across a boundary
            int differing = 0;
            for (std::size_t i = 0; i < f.code.size(); ++i) differing += f.code[i] != base_code[i];
            CHECK(differing <= 1);
        }
    }
}

TEST_CASE("edge: x 2^e encodes to x's codes and scale 2^e, across the float range") {
    // Powers of two scale exactly, and so does encode: the kernels' float sums hold
    // between norms 2^-30 and 2^64, and beyond them x is rescaled by a power of two
    // first (isa/encode_range.hpp).  From the smallest e that keeps every coordinate
    // normal to the largest that keeps the norm below TQ_MAX_NORM, both paths on
    // both sides, the codes and the scale's significand must not move.
    for (const tq_bit_kernels& v : tq::variants()) {
        const int d = v.head_dim;
        CAPTURE(d);
        CAPTURE(v.rate_eighths);
        Fixture f(v);
        const auto base = tq::test::gaussian(d, 14);
        float smallest = FLT_MAX;
        for (float e : base) smallest = std::min(smallest, std::abs(e));
        const double norm = std::sqrt(tq::test::dot(base, base));
        const int lowest = static_cast<int>(std::ceil(std::log2(FLT_MIN / smallest)));
        const int highest = static_cast<int>(std::floor(std::log2(TQ_MAX_NORM(d) / norm))) - 1;
        REQUIRE(lowest < -40);  // the small-norm path (norm below 2^-30) is reached
        REQUIRE(highest > 70);  // and the large one (above 2^64)
        for (int kind : {TQ_SCALE_NORM, TQ_SCALE_LEAST_SQUARES}) {
            CAPTURE(kind);
            f.kind = kind;
            REQUIRE(f.encode(base) == TQ_OK);
            const auto base_code = f.code;
            const float base_scale = f.scale;
            for (int e = lowest;; e = std::min(e + 7, highest)) {
                CAPTURE(e);
                std::vector<float> x(d);
                for (int i = 0; i < d; ++i) x[i] = std::ldexp(base[i], e);
                REQUIRE(f.encode(x) == TQ_OK);
                CHECK(f.code == base_code);
                CHECK(f.scale == std::ldexp(base_scale, e));
                if (e == highest) break;
            }
        }
    }
}

TEST_CASE("edge: -x encodes to the mirrored levels of x: it decodes to exactly -x^") {
    // The levels come from |u| and the sign (the codebooks are symmetric about 0),
    // so negating x negates every rotated coordinate, mirrors every level and keeps
    // the scale; decode is odd in the levels' centroids.
    for (const tq_bit_kernels& v : tq::variants()) {
        const int d = v.head_dim;
        CAPTURE(d);
        CAPTURE(v.rate_eighths);
        Fixture f(v);
        for (int kind : {TQ_SCALE_NORM, TQ_SCALE_LEAST_SQUARES}) {
            CAPTURE(kind);
            f.kind = kind;
            for (std::uint64_t seed : {15, 16}) {
                auto x = tq::test::gaussian(d, seed);
                REQUIRE(f.encode(x) == TQ_OK);
                const float scale = f.scale;
                f.decode();
                const auto decoded = f.out;
                for (auto& e : x) e = -e;
                REQUIRE(f.encode(x) == TQ_OK);
                CHECK(f.scale == scale);
                f.decode();
                int mismatched = 0;
                for (int i = 0; i < d; ++i) mismatched += f.out[i] != -decoded[i];
                CHECK(mismatched == 0);
            }
        }
    }
}

TEST_CASE("edge: NaN, Inf and norms beyond float are refused and nothing is written") {
    const float bad_values[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity()};
    for (const tq_bit_kernels& v : tq::variants()) {
        const int d = v.head_dim;
        CAPTURE(d);
        CAPTURE(v.rate_eighths);
        Fixture f(v);
        for (int kind : {TQ_SCALE_NORM, TQ_SCALE_LEAST_SQUARES})
        for (float bad : bad_values) {
            f.kind = kind;
            for (int pos : {0, d - 1}) {
                auto x = tq::test::gaussian(d, 12);
                x[pos] = bad;
                std::fill(f.code.begin(), f.code.end(), 0xAB);
                f.scale = -7;
                CHECK(f.encode(x) == TQ_ERROR_NONFINITE);
                for (auto b : f.code) REQUIRE(b == 0xAB);
                CHECK(f.scale == -7);
            }
        }
        std::fill(f.code.begin(), f.code.end(), 0xAB);
        CHECK(f.encode(std::vector<float>(d, FLT_MAX)) == TQ_ERROR_RANGE);  // |x| = sqrt(d) FLT_MAX
        for (auto b : f.code) REQUIRE(b == 0xAB);
        CHECK(f.scale == -7);
    }
}

TEST_CASE("edge: norms up to TQ_MAX_NORM decode to finite values, larger ones are refused") {
    for (const tq_bit_kernels& v : tq::variants()) {
        const int d = v.head_dim;
        CAPTURE(d);
        CAPTURE(v.rate_eighths);
        Fixture f(v);
        const double limit = TQ_MAX_NORM(d);
        for (int kind : {TQ_SCALE_NORM, TQ_SCALE_LEAST_SQUARES}) {
            f.kind = kind;
            std::vector<float> one_hot(d, 0.0f), spread = tq::test::gaussian(d, 13);
            one_hot[d / 3] = static_cast<float>(limit * 0.999);
            const double spread_norm = std::sqrt(tq::test::dot(spread, spread));
            for (auto& e : spread) e = static_cast<float>(e * limit * 0.999 / spread_norm);
            for (const auto* x : {&one_hot, &spread}) {
                REQUIRE(f.encode(*x) == TQ_OK);
                f.decode();
                CHECK(all_finite(f.out));
                CHECK(f.relative_error(*x) < 4 * v.mse_unit_vector + 1e-6);
            }
            one_hot[d / 3] = static_cast<float>(limit * 1.01);
            CHECK(f.encode(one_hot) == TQ_ERROR_RANGE);
        }
    }
}
