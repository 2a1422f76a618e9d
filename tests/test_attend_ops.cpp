// The attention's per-ISA bookkeeping loops (runtime/src/attend_ops.cpp) against plain
// loops, for every copy this CPU runs: exact where the loop is one rounding per element
// (or two, as documented), the dot product within its summation bound; all copies give
// the same bits.
#include "attend_ops.hpp"

#include "half_float.hpp"
#include "isa/int8.hpp"
#include "runtime_copies.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
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

TEST_CASE("attend ops: the integer tiles' loops as plain loops, and transpose moves any bits") {
    for (const char* isa : tq::test::runnable_copies()) {
        CAPTURE(isa);
        const AttendOps ops = attend_ops_for(isa);
        std::uint32_t x = 12345u;
        auto next = [&] {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            return x;
        };
        // The integer tiles move a key's int8 bytes four at a time as floats: NaN patterns too.
        std::vector<float> words(13 * 20), moved(20 * 16, 1.0f);
        for (float& w : words) {
            const std::uint32_t bits = next();
            std::memcpy(&w, &bits, 4);
        }
        ops.transpose(words.data(), 13, 20, moved.data(), 16);
        bool same = true;
        for (std::size_t i = 0; i < 20; ++i)
            for (std::size_t u = 0; u < 13; ++u) same = same && std::memcmp(&moved[i * 16 + u], &words[u * 20 + i], 4) == 0;
        CHECK(same);

        std::int8_t high[32], low[32];
        for (int l = 0; l < 32; ++l) {
            high[l] = std::int8_t(int(next() % 255) - 127);
            low[l] = std::int8_t(int(next() % 255) - 127);
        }
        for (std::size_t d : {16, 64, 208})
            for (std::size_t high_coords : std::initializer_list<std::size_t>{0, 6, 16, 26, d}) {
                CAPTURE(d);
                CAPTURE(high_coords);
                std::vector<std::uint8_t> levels(d);
                for (auto& l : levels) l = std::uint8_t(next() % 32);
                std::vector<std::int8_t> out(d);
                const std::int32_t sum = ops.lookup_levels(levels.data(), d, high_coords, high, low, out.data());
                std::int32_t want_sum = 0;
                bool equal = true;
                for (std::size_t i = 0; i < d; ++i) {
                    const std::int8_t want = (i < high_coords ? high : low)[levels[i]];
                    equal = equal && out[i] == want;
                    want_sum += want;
                }
                CHECK(equal);
                CHECK(sum == want_sum);
            }
        for (std::size_t n : {1, 4, 7, 64})
            for (std::size_t d : {16, 48}) {
                CAPTURE(n);
                CAPTURE(d);
                std::vector<std::int8_t> rows(n * d), out((n + 3) / 4 * 4 * d, 99);
                for (auto& r : rows) r = std::int8_t(next());
                ops.interleave4(rows.data(), n, d, out.data());
                bool equal = true;
                for (std::size_t t = 0; t < (n + 3) / 4 * 4; ++t)
                    for (std::size_t i = 0; i < d; ++i)
                        equal = equal && out[(t / 4) * 4 * d + 4 * i + t % 4] == (t < n ? rows[t * d + i] : 0);
                CHECK(equal);
            }
        // The roundings and finishes: int8.hpp's, and the fused kernels' float steps.
        const std::vector<float> q = values(200, 3.0f, 7), w = values(64, 1.0f, 8), s = values(64, 2.0f, 9);
        std::vector<std::uint8_t> got(200), want(200);
        std::vector<std::int8_t> natural(200);
        const float s_q = ops.round_query(q.data(), 200, got.data());
        CHECK(s_q == tq::int8::round_query(q.data(), 200, natural.data()));
        bool equal = true;
        for (std::size_t i = 0; i < 200; ++i) equal = equal && got[i] == std::uint8_t(natural[i] + 127);
        CHECK(equal);
        std::vector<float> positive(64), scales(64);
        for (std::size_t t = 0; t < 64; ++t) {
            positive[t] = std::fabs(w[t]);
            scales[t] = std::fabs(s[t]);
        }
        for (std::size_t n : {1, 37, 64}) {
            std::vector<std::uint8_t> u(64, 7), v(64, 9);
            CHECK(ops.round_weights(positive.data(), scales.data(), n, u.data()) ==
                  tq::int8::quantize_weights(positive.data(), scales.data(), n, 0, v.data()));
            CHECK(u == v);
        }
        std::vector<std::int32_t> sums(64), bias(64);
        for (std::size_t t = 0; t < 64; ++t) {
            sums[t] = std::int32_t(next() % 2000001u) - 1000000;
            bias[t] = std::int32_t(next() % 2001u) - 1000;
        }
        std::vector<float> out(64), acc = values(64, 5.0f, 10), acc0 = acc;
        ops.int_scores(sums.data(), bias.data(), scales.data(), 64, 0.0123f, out.data());
        ops.int_accumulate(sums.data(), 64, 0.0456f, acc.data());
        equal = true;
        for (std::size_t t = 0; t < 64; ++t)
            equal = equal && out[t] == scales[t] * (float(sums[t] - bias[t]) * 0.0123f) &&
                    acc[t] == std::fma(float(sums[t]), 0.0456f, acc0[t]);
        CHECK(equal);
    }
}
