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

// H_d as docs/rotations.md defines it, built here from the definitions: the
// Kronecker product H_{m_1} ⊗ ... ⊗ H_{m_n} ⊗ H_p of Paley matrices (m_i in
// 12, 20, 28, ascending; the fewest dense operations) and the Sylvester H_p.
using Matrix = std::vector<std::vector<int>>;

Matrix kron(const Matrix& a, const Matrix& b) {
    const std::size_t n = a.size(), m = b.size();
    Matrix out(n * m, std::vector<int>(n * m));
    for (std::size_t i = 0; i < n * m; ++i)
        for (std::size_t j = 0; j < n * m; ++j) out[i][j] = a[i / m][j / m] * b[i % m][j % m];
    return out;
}

Matrix sylvester(int p) {  // H[i][j] = (-1)^popcount(i & j)
    Matrix h(p, std::vector<int>(p));
    for (int i = 0; i < p; ++i)
        for (int j = 0; j < p; ++j) h[i][j] = std::popcount(unsigned(i & j)) % 2 ? -1 : 1;
    return h;
}

// Paley I (q = m - 1 prime, 3 mod 4): I + [[0, 1ᵀ], [-1, Q]]; Paley II (q = m/2 - 1
// prime, 1 mod 4): C ⊗ [[1, 1], [1, -1]] + I ⊗ [[1, -1], [-1, -1]] with C = [[0, 1ᵀ], [1, Q]];
// Q[i][j] = χ(j - i), χ the quadratic character mod q.
bool prime(int q) {
    for (int p = 2; p * p <= q; ++p)
        if (q % p == 0) return false;
    return q > 1;
}

Matrix paley(int m) {
    const bool first = prime(m - 1) && (m - 1) % 4 == 3;
    const int q = first ? m - 1 : m / 2 - 1;
    auto chi = [q](int a) {
        a = ((a % q) + q) % q;
        if (a == 0) return 0;
        for (int x = 1; x < q; ++x)
            if (x * x % q == a) return 1;
        return -1;
    };
    Matrix c(q + 1, std::vector<int>(q + 1));
    for (int i = 0; i <= q; ++i)
        for (int j = 0; j <= q; ++j)
            c[i][j] = i == 0 ? (j == 0 ? 0 : 1) : j == 0 ? (first ? -1 : 1) : chi(j - i);
    if (first) {
        for (int i = 0; i <= q; ++i) c[i][i] += 1;
        return c;
    }
    Matrix h(m, std::vector<int>(m));
    const int plus[2][2] = {{1, 1}, {1, -1}}, zero[2][2] = {{1, -1}, {-1, -1}};
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < m; ++j)
            h[i][j] = c[i / 2][j / 2] ? c[i / 2][j / 2] * plus[i % 2][j % 2] : zero[i % 2][j % 2];
    return h;
}

Matrix hadamard(int d) {
    std::vector<int> best;
    int best_cost = -1;
    const std::vector<std::vector<int>> choices = {{},         {12},       {20},       {28},       {12, 12},
                                                   {12, 20},   {12, 28},   {20, 20},   {20, 28},   {28, 28},
                                                   {12, 12, 12}, {12, 12, 20}, {12, 12, 28}};
    for (const auto& orders : choices) {
        int prod = 1, cost = 0;
        for (int m : orders) prod *= m, cost += m;
        if (d % prod) continue;
        const int p = d / prod;
        if (!std::has_single_bit(unsigned(p)) || (!orders.empty() && p < 4)) continue;
        if (best_cost < 0 || cost < best_cost) best = orders, best_cost = cost;
    }
    REQUIRE(best_cost >= 0);
    int prod = 1;
    for (int m : best) prod *= m;
    Matrix h = {{1}};
    for (int m : best) h = kron(h, paley(m));
    return kron(h, sylvester(d / prod));
}

const tq_kernels& kernels_for(int d) {
    const auto& v = tq::variants().front();
    return tq::find(d, tq::rate(v), tq::rate(v));
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
        const Matrix h = hadamard(d);
        for (int i = 0; i < d; ++i)  // a Hadamard matrix: H Hᵀ = d I
            for (int j = 0; j < d; ++j) {
                int g = 0;
                for (int t = 0; t < d; ++t) g += h[i][t] * h[j][t];
                REQUIRE(g == (i == j ? d : 0));
            }
        const auto signs = tq::rotation_signs(d, tq::test::kSeed);
        const auto x = tq::test::gaussian(d, 1);
        std::vector<float> y(d), z(d);
        k.rotate(signs.data(), x.data(), y.data());
        k.unrotate(signs.data(), x.data(), z.data());
        double worst = 0, worst_inverse = 0;
        for (int i = 0; i < d; ++i) {
            double s = 0, t = 0;  // (H diag(signs) x)_i and (diag(signs) Hᵀ x)_i
            for (int j = 0; j < d; ++j) {
                s += h[i][j] * double(signs[j]) * x[j];
                t += h[j][i] * double(signs[i]) * x[j];
            }
            worst = std::max(worst, std::abs(s - y[i]));
            worst_inverse = std::max(worst_inverse, std::abs(t - z[i]));
        }
        CHECK(worst < 1e-5 * std::sqrt(tq::test::dot(x, x)));
        CHECK(worst_inverse < 1e-5 * std::sqrt(tq::test::dot(x, x)));
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
