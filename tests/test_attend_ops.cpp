// The attention's per-ISA bookkeeping loops (runtime/src/attend_ops.cpp) against plain
// loops, for every copy this CPU runs: exact where the loop is one rounding per element
// (or two, as documented), the dot product within its summation bound; all copies give
// the same bits.
#include "attend_ops.hpp"

#include "half_float.hpp"
#include "runtime_copies.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

using tq::detail::AttendOps;
using tq::detail::attend_ops_for;

namespace {

// Deterministic floats of mixed signs and magnitudes in about [-scale, scale].
std::vector<float> values(std::size_t n, float scale, unsigned seed) {
    std::vector<float> v(n);
    std::uint32_t x = 2463534242u ^ seed;
    for (float& f : v) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        f = scale * (float(x % 20001u) / 10000.0f - 1.0f);
    }
    return v;
}

}  // namespace

TEST_CASE("attend ops: widen is half_to_float for every finite half") {
    std::vector<std::uint16_t> halves;
    for (std::uint32_t h = 0; h < 65536; ++h)
        if ((h & 0x7c00u) != 0x7c00u) halves.push_back(std::uint16_t(h));  // not inf or NaN
    for (const char* isa : tq::test::runnable_copies()) {
        CAPTURE(isa);
        std::vector<float> out(halves.size() + 1, -7.0f);
        attend_ops_for(isa).widen(halves.data(), halves.size(), out.data());
        bool equal = true;
        for (std::size_t i = 0; i < halves.size(); ++i) equal = equal && out[i] == tq::detail::half_to_float(halves[i]);
        CHECK(equal);
        CHECK(out.back() == -7.0f);  // nothing past n
    }
}

TEST_CASE("attend ops: dot within its summation bound, the same bits in every copy") {
    const AttendOps scalar = attend_ops_for("scalar");
    for (std::size_t d : {1, 7, 8, 64, 100, 256, 576}) {
        const std::vector<float> x = values(d, 3.0f, unsigned(d)), y = values(d, 0.01f, unsigned(d) + 1);
        // Each product is exact in double (24 + 24 bits); only the d - 1 additions
        // round, each by at most 2^-53 of a partial sum bounded by sum |x y|.
        long double exact = 0, magnitude = 0;
        for (std::size_t i = 0; i < d; ++i) {
            exact += (long double)x[i] * y[i];
            magnitude += std::fabs((long double)x[i] * y[i]);
        }
        const double bound = double(d) * 0x1p-53 * double(magnitude);
        const double want = scalar.dot(x.data(), y.data(), d);
        CHECK(std::fabs(double(want - exact)) <= bound);
        for (const char* isa : tq::test::runnable_copies()) {
            CAPTURE(isa);
            CHECK(attend_ops_for(isa).dot(x.data(), y.data(), d) == want);
        }
    }
}

TEST_CASE("attend ops: transpose, affine_rows, scale and rescale as plain loops") {
    for (const char* isa : tq::test::runnable_copies()) {
        CAPTURE(isa);
        const AttendOps ops = attend_ops_for(isa);
        for (std::size_t n : {1, 7, 8, 13, 64})
            for (std::size_t d : {8, 12, 64, 130}) {
                CAPTURE(n);
                CAPTURE(d);
                const std::size_t ld = (n + 15) / 16 * 16;
                const std::vector<float> rows = values(n * d, 2.0f, 3), mul = values(d, 1.5f, 4), add = values(d, 0.5f, 5);
                std::vector<float> out(d * ld, -1.0f);
                ops.transpose(rows.data(), n, d, out.data(), ld);
                bool equal = true;
                for (std::size_t i = 0; i < d; ++i)
                    for (std::size_t u = 0; u < ld; ++u) equal = equal && out[i * ld + u] == (u < n ? rows[u * d + i] : 0.0f);
                CHECK(equal);

                // Each of the four combinations of a null or given mul and add.
                for (const float* m : {mul.data(), static_cast<const float*>(nullptr)})
                    for (const float* a : {add.data(), static_cast<const float*>(nullptr)}) {
                        std::vector<float> mapped = rows;
                        ops.affine_rows(mapped.data(), n, d, m, a);
                        equal = true;
                        for (std::size_t u = 0; u < n; ++u)
                            for (std::size_t i = 0; i < d; ++i) {
                                float want = rows[u * d + i];
                                if (m) want = want * m[i];
                                if (a) want = want + a[i];
                                equal = equal && mapped[u * d + i] == want;
                            }
                        CHECK(equal);
                    }
            }
        for (std::size_t n : {1, 5, 16, 257}) {
            const std::vector<float> x = values(n, 4.0f, 6);
            std::vector<float> scaled = x, a = x;
            std::vector<double> e(x.begin(), x.end());
            ops.scale(scaled.data(), n, 0.37f);
            ops.rescale(a.data(), e.data(), n, 0.123456789);
            bool equal = true;
            for (std::size_t t = 0; t < n; ++t)
                equal = equal && scaled[t] == x[t] * 0.37f && a[t] == float(0.123456789 * x[t]) &&
                        e[t] == double(x[t]) * 0.123456789;
            CHECK(equal);
        }
    }
}
