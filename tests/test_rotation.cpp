// The generated rotation pair for every compiled head dim.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <set>

namespace {

std::set<int> compiled_head_dims() {
    std::set<int> dims;
    for (const auto& v : tq::variants()) dims.insert(v.head_dim);
    return dims;
}

const tq_kernels& kernels_for(int d) {
    const auto& v = tq::variants().front();
    return tq::find(d, v.bits, v.bits);
}

}  // namespace

TEST_CASE("rotation: orthonormal, R R^T = I") {
    for (int d : compiled_head_dims()) {
        CAPTURE(d);
        const auto& k = kernels_for(d);
        const auto signs = tq::rotation_signs(d, tq::test::kSeed);
        // Column j of R is rotate(e_j).
        std::vector<float> R(std::size_t(d) * d), e(d);
        for (int j = 0; j < d; ++j) {
            std::fill(e.begin(), e.end(), 0.0f);
            e[j] = 1;
            k.rotate(signs.data(), e.data(), &R[std::size_t(j) * d]);
        }
        double worst = 0;
        for (int a = 0; a < d; ++a)
            for (int b = 0; b < d; ++b) {
                const double g = tq::test::dot({&R[std::size_t(a) * d], std::size_t(d)}, {&R[std::size_t(b) * d], std::size_t(d)});
                worst = std::max(worst, std::abs(g - (a == b)));
            }
        CHECK(worst < 1e-5);
    }
}

TEST_CASE("rotation: equals the dense H_d diag(signs) of its definition") {
    for (int d : compiled_head_dims()) {
        CAPTURE(d);
        const auto& k = kernels_for(d);
        const auto signs = tq::rotation_signs(d, tq::test::kSeed);
        const auto x = tq::test::gaussian(d, 1);
        std::vector<float> y(d);
        k.rotate(signs.data(), x.data(), y.data());
        double worst = 0;
        for (int i = 0; i < d; ++i) {
            double s = 0;  // Sylvester Hadamard: H[i][j] = (-1)^popcount(i & j)
            for (int j = 0; j < d; ++j) s += (std::popcount(unsigned(i & j)) % 2 ? -1.0 : 1.0) * signs[j] * x[j];
            worst = std::max(worst, std::abs(s - y[i]));
        }
        CHECK(worst < 1e-5 * std::sqrt(tq::test::dot(x, x)));
    }
}

TEST_CASE("rotation: unrotate(rotate(x)) = x, also in place") {
    for (int d : compiled_head_dims()) {
        CAPTURE(d);
        const auto& k = kernels_for(d);
        const auto signs = tq::rotation_signs(d, tq::test::kSeed);
        const auto x = tq::test::gaussian(d, 2);
        std::vector<float> y(d), z(d);
        k.rotate(signs.data(), x.data(), y.data());
        k.unrotate(signs.data(), y.data(), z.data());
        CHECK(std::sqrt(tq::test::squared_distance(x, z) / tq::test::dot(x, x)) < 1e-6);
        CHECK(tq::test::dot(y, y) == doctest::Approx(tq::test::dot(x, x)).epsilon(1e-6));
        std::vector<float> w = x;  // in place
        k.rotate(signs.data(), w.data(), w.data());
        CHECK(w == y);
        k.unrotate(signs.data(), w.data(), w.data());
        CHECK(w == z);
    }
}

TEST_CASE("rotation: signs are SplitMix64's, deterministic per seed, different across seeds") {
    for (int d : compiled_head_dims()) {
        CAPTURE(d);
        const auto a = tq::rotation_signs(d, 7), b = tq::rotation_signs(d, 7), c = tq::rotation_signs(d, 8);
        CHECK(a == b);
        CHECK(a != c);
        for (float s : a) CHECK(std::abs(s) == static_cast<float>(1 / std::sqrt(double(d))));
        // SplitMix64 from state 0 starts 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f:
        // top bits 1, 0, 0, so the signs start -, +, +.
        const auto z = tq::rotation_signs(d, 0);
        CHECK(z[0] < 0);
        CHECK(z[1] > 0);
        CHECK(z[2] > 0);
        const auto& k = kernels_for(d);
        const auto x = tq::test::gaussian(d, 3);
        std::vector<float> ya(d), yc(d);
        k.rotate(a.data(), x.data(), ya.data());
        k.rotate(c.data(), x.data(), yc.data());
        CHECK(ya != yc);
    }
}
