// The softmax's vectorized exponentials (runtime/src/softmax.cpp) against libm in
// double, and its max and sum against plain loops, for every copy this CPU runs; all
// copies give the same bits.
#include "softmax.hpp"

#include "runtime_copies.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

using tq::detail::Softmax;
using tq::detail::softmax_for;

namespace {

void check_exp(const Softmax& softmax) {
    // Relative error budget: the polynomial's 2^-23 on [-ln2/2, ln2/2] (Cephes), plus
    // about 8 float roundings of 2^-24 in the reduction and the Horner steps: < 4 ulp.
    const double tolerance = 4 * 0x1p-23;
    std::vector<float> x;
    for (int i = 0; i <= 200000; ++i) x.push_back(-90.0f * float(i) / 200000.0f);
    x.push_back(-0.0f);
    x.push_back(-1e-30f);
    std::vector<float> e = x, same = x;
    const double sum = softmax.exp_sum(e.data(), e.size(), 0.0f);
    CHECK(softmax_for("scalar").exp_sum(same.data(), same.size(), 0.0f) == sum);  // every copy, the same bits
    CHECK(same == e);
    double direct = 0, worst = 0;
    for (std::size_t t = 0; t < x.size(); ++t) {
        direct += e[t];
        if (x[t] < -87.3f) {
            CHECK(e[t] == 0.0f);
            continue;
        }
        const double want = std::exp(double(x[t]));
        worst = std::max(worst, std::abs(e[t] - want) / want);
    }
    CHECK(worst <= tolerance);
    CHECK(std::abs(sum - direct) <= 1e-15 * direct * double(x.size()));

    // The shift: the chunk's max gives exactly 1, and the rest are relative to it.
    std::vector<float> y{3.5f, 1.0f, 3.5f - 87.0f, -500.0f};
    CHECK(softmax.exp_sum(y.data(), y.size(), 3.5f) == doctest::Approx(1 + std::exp(-2.5) + std::exp(-87.0)));
    CHECK(y[0] == 1.0f);
    CHECK(y[3] == 0.0f);
}

void check_max(const Softmax& softmax) {
    for (std::size_t n = 1; n <= 40; ++n)
        for (std::size_t at = 0; at < n; ++at) {
            std::vector<float> v(n);
            for (std::size_t i = 0; i < n; ++i) v[i] = -float((i * 7919) % 97) - 1.0f;
            v[at] = 0.5f;
            CHECK(softmax.max(v.data(), n) == 0.5f);
            v[at] = -1e30f;
            CHECK(softmax.max(v.data(), n) == *std::max_element(v.begin(), v.end()));
        }
}

}  // namespace

TEST_CASE("softmax: exp(x - m) within 4 ulp of libm down to exp(-87.3), 0 below, summed in double") {
    for (const char* isa : tq::test::runnable_copies()) {
        CAPTURE(isa);
        check_exp(softmax_for(isa));
    }
}

TEST_CASE("softmax: the max is the largest element for every length and position") {
    for (const char* isa : tq::test::runnable_copies()) {
        CAPTURE(isa);
        check_max(softmax_for(isa));
    }
}
