// The dense product (tq_kernels::product, one per ISA) against exact sums: within
// the bound of a float sum of k products, at every edge of its register tiles; b's
// columns past n are read but never used, and c is written inside m x n only.
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace {

// gamma_j = j u / (1 - j u), u = 2^-24: |fl(sum of j terms, each a rounded product or a
// fused multiply-add) - exact| <= gamma_j * sum of |terms| (Higham, Accuracy and Stability
// of Numerical Algorithms, 2nd ed., section 3.1), in any order of summation.
double gamma(std::size_t j) {
    const double u = std::ldexp(1.0, -24);
    return double(j) * u / (1 - double(j) * u);
}

}  // namespace

TEST_CASE("product: c = a b and c += a b within the float sum's bound, every tile edge, and nothing else written") {
    const tq_bit_kernels& v = tq::variants()[0];
    const tq_kernels& kern = tq::find(v.head_dim, tq::rate(v), tq::rate(v));
    REQUIRE((kern.product != nullptr));
    constexpr float kSentinel = -7777.0f;
    for (std::size_t m : {1, 2, 5, 6, 7, 11, 12, 13, 25})
        for (std::size_t n : {1, 7, 8, 9, 16, 17, 31, 32, 33, 64, 80})
            for (std::size_t k : {0, 1, 3, 64, 257})
                for (int accumulate : {0, 1}) {
                    CAPTURE(m);
                    CAPTURE(n);
                    CAPTURE(k);
                    CAPTURE(accumulate);
                    // b's rows are read to the 16-float boundary past n, and no further: its
                    // last row ends there, so an over-read leaves the allocation (ASan).
                    const std::size_t readable = (n + 15) / 16 * 16;
                    const std::size_t lda = k + 3, ldb = readable + 5, ldc = n + 4;
                    const auto a = tq::test::gaussian(m * lda, 11 + m + k);
                    auto b = tq::test::gaussian(k ? (k - 1) * ldb + readable : 0, 13 + n + k);
                    for (std::size_t p = 0; p < k; ++p)  // past n: NaN, which any use would carry into c
                        for (std::size_t j = n; j < (p + 1 < k ? ldb : readable); ++j)
                            b[p * ldb + j] = std::numeric_limits<float>::quiet_NaN();
                    std::vector<float> c((m + 1) * ldc, kSentinel);  // one row past m
                    const auto start = tq::test::gaussian(m * ldc, 17 + m);
                    if (accumulate)
                        for (std::size_t i = 0; i < m; ++i)
                            for (std::size_t j = 0; j < n; ++j) c[i * ldc + j] = start[i * ldc + j];
                    const std::vector<float> before = c;
                    kern.product(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc, accumulate);
                    int bad = 0;
                    for (std::size_t i = 0; i <= m; ++i)
                        for (std::size_t j = 0; j < ldc; ++j) {
                            const float got = c[i * ldc + j];
                            if (i == m || j >= n) {  // outside: untouched, bit for bit
                                bad += std::memcmp(&got, &before[i * ldc + j], sizeof got) != 0;
                                continue;
                            }
                            double exact = accumulate ? double(before[i * ldc + j]) : 0, magnitude = std::abs(exact);
                            for (std::size_t p = 0; p < k; ++p) {
                                const double term = double(a[i * lda + p]) * b[p * ldb + j];
                                exact += term;
                                magnitude += std::abs(term);
                            }
                            // The sum's roundings, and one more for the final addition to c.
                            bad += !(std::abs(got - exact) <= gamma(k + 1) * magnitude);
                        }
                    CHECK(bad == 0);
                }
}

TEST_CASE("product: every head dim's table of an ISA holds that ISA's one product") {
    const tq_kernels& first = tq::find(tq::variants()[0].head_dim, tq::rate(tq::variants()[0]), tq::rate(tq::variants()[0]));
    for (const tq_bit_kernels& v : tq::variants()) {
        CAPTURE(v.head_dim);
        CHECK((tq::find(v.head_dim, tq::rate(v), tq::rate(v)).product == first.product));
    }
}
