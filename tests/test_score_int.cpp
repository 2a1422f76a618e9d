// The integer score path (score_int): within the bound docs/kernels.md derives from
// its int8 roundings (int16 above 32 levels) of the exact score over the decoded levels
// (and within the query's rounding alone of the score over the tables' centroids), for
// every variant; each query of a group scored bit for bit as alone; chosen by
// fa_tq_config.score, and the cache's attention within that bound's reach.
#include "test_support.hpp"
#include "turboquant/turboquant.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>

namespace {

struct Keys {
    std::vector<std::uint8_t> codes;
    std::vector<float> scales;
};

Keys encode_keys(const tq_bit_kernels& v, const std::vector<float>& signs, std::size_t n, std::uint64_t seed) {
    const int d = v.head_dim;
    const auto x = tq::test::gaussian(n * d, seed);
    Keys k{std::vector<std::uint8_t>(n * v.code_bytes), std::vector<float>(n)};
    for (std::size_t t = 0; t < n; ++t)
        REQUIRE(v.encode(signs.data(), &x[t * d], TQ_SCALE_LEAST_SQUARES, &k.codes[t * v.code_bytes], &k.scales[t]) ==
                TQ_OK);
    return k;
}

// Whether the variant's integer score is the int16 one (a codebook above 32 levels).
bool wide(const tq_bit_kernels& v) { return v.bits + (v.high_coords ? 1 : 0) > 5; }

// The largest integer of the query and the tables: 127, or for the int16 score the
// largest M <= 2047 with d M² <= 2^31 - 1 (docs/kernels.md).
int max_level(const tq_bit_kernels& v) {
    if (!wide(v)) return 127;
    int m = 2047;
    while (double(v.head_dim) * m * m > 2147483647.0) --m;
    return m;
}

// The step of the tables, as docs/kernels.md defines it: the largest centroid
// magnitude of the variant's codebooks (the last, ascending and symmetric) over M.
float table_step(const tq_bit_kernels& v) {
    float top = v.centroids[(1 << v.bits) - 1];
    if (v.high_coords) top = std::max(top, v.high_centroids[(2 << v.bits) - 1]);
    return top / float(max_level(v));
}

// Whether the variant rounds the query to two bytes, Q and its residual R (codebooks
// of 32 levels at head dims up to 512, docs/kernels.md): the query's rounding is then
// 1/508 of s_q, not 1/2.
bool residual_query(const tq_bit_kernels& v) { return v.bits + (v.high_coords ? 1 : 0) == 5 && v.head_dim <= 512; }

// e_q / s_q: the query's rounding in units of s_q = max|q| / M (int8::quantize_query,
// int16::quantize_query: half a unit, and three float roundings of a number up to M).
double query_rounding(const tq_bit_kernels& v) {
    if (wide(v)) return 0.5 + 0x1p-11;
    return (residual_query(v) ? 1.0 / 508 : 0.5) + 0x1p-14;
}

// e_q for query q.
double query_error(const tq_bit_kernels& v, std::span<const float> q) {
    float top = 0;
    for (float x : q) top = std::max(top, std::fabs(x));
    return double(top / float(max_level(v))) * query_rounding(v);
}

// Bound b on the integer arithmetic's error, plus the float steps' roundings (the three
// products: 2^-22 of the result; with the residual, or int16's sums, also the sum's
// conversion, no longer exact above 2^24: 2^-21) and a 1e-6 relative slack on b's own
// float evaluation.
double with_float_steps(const tq_bit_kernels& v, double b, double exact) {
    return b * (1 + 1e-6) + (residual_query(v) || wide(v) ? 0x1p-21 : 0x1p-22) * (std::fabs(exact) + b);
}

// |score_int - scale <q, c[levels]>| <= scale (step/2 sum|q_i| + e_q sum|c_i| + d e_q step/2)
// with e_q = s_q (1/2 + 2^-14), or s_q (1/508 + 2^-14) with the residual, s_q = max|q| /
// 127 (int16: s_q (1/2 + 2^-11), s_q = max|q| / M; docs/kernels.md), plus the float steps.
double bound(const tq_bit_kernels& v, std::span<const float> q, const std::uint8_t* levels, float scale, double exact) {
    const int d = v.head_dim;
    const double step = table_step(v);
    const double e_q = query_error(v, q);
    double sum_q = 0, sum_c = 0;
    for (int i = 0; i < d; ++i) {
        sum_q += std::fabs(q[i]);
        sum_c += std::fabs(tq::test::coord_centroids(v, i)[levels[i]]);
    }
    return with_float_steps(v, std::fabs(scale) * (step / 2 * sum_q + e_q * sum_c + d * e_q * step / 2), exact);
}

// The query's rounding alone: against the score over the tables' centroids
// step · T_l (T_l = round(c_l / step), as int8::table rounds), the difference is
// scale Σ_i (q_i - s_q Q̃_i) step T_{l_i}, Q̃ the query's one or two bytes, so at most
// scale e_q step Σ_i |T_{l_i}|, plus the float steps as in bound().  Tighter than
// bound() by the table's rounding, which dominates it where the residual is kept: a
// kernel that dropped the residual fails this one.
double table_centroid(const tq_bit_kernels& v, int i, int level) {
    const float step = table_step(v);
    return std::round(double(tq::test::coord_centroids(v, i)[level]) / double(step)) * double(step);
}
double query_bound(const tq_bit_kernels& v, std::span<const float> q, const std::uint8_t* levels, float scale,
                   double exact) {
    double sum_t = 0;
    for (int i = 0; i < v.head_dim; ++i) sum_t += std::fabs(table_centroid(v, i, levels[i]));
    return with_float_steps(v, std::fabs(scale) * query_error(v, q) * sum_t, exact);
}

// The scores both bounds compare against, in double: over the centroids and over the
// tables' centroids.
struct Reference {
    double exact = 0, over_table = 0;
};
Reference reference(const tq_bit_kernels& v, std::span<const float> q, const std::uint8_t* levels, float scale) {
    Reference r;
    for (int i = 0; i < v.head_dim; ++i) {
        r.exact += double(q[i]) * tq::test::coord_centroids(v, i)[levels[i]];
        r.over_table += double(q[i]) * table_centroid(v, i, levels[i]);
    }
    r.exact *= scale;
    r.over_table *= scale;
    return r;
}

constexpr std::size_t kCounts[] = {0, 1, 7, 8, 9, 33, 64};

}  // namespace

TEST_CASE("score_int: within the bounds of its int8 (or int16) roundings, for every variant") {
    int tested = 0;
    tq::test::for_each_variant([&](const tq_bit_kernels& v, const tq_kernels& k, const std::vector<float>& signs) {
        REQUIRE(bool(v.score_int));  // every rate: int8 tables up to 32 levels, int16 above
        ++tested;
        const int d = v.head_dim;
        for (std::size_t n : kCounts) {
            CAPTURE(n);
            const Keys keys = encode_keys(v, signs, n, 11 + n);
            for (std::uint64_t qseed : {5u, 6u}) {
                auto q = tq::test::gaussian(d, qseed);
                if (qseed == 6) q[std::size_t(d / 3)] *= 40;  // one dominant coordinate: a coarse s_q
                std::vector<float> q_rot(d), scores(n + 1, -12345.0f);
                k.rotate(signs.data(), q.data(), q_rot.data());
                v.score_int(q_rot.data(), 1, keys.codes.data(), keys.scales.data(), n, scores.data(), n);
                std::vector<std::uint8_t> levels(d);
                for (std::size_t t = 0; t < n; ++t) {
                    v.unpack(&keys.codes[t * v.code_bytes], levels.data());
                    const Reference ref = reference(v, q_rot, levels.data(), keys.scales[t]);
                    CAPTURE(t);
                    CHECK(std::fabs(scores[t] - ref.exact) <= bound(v, q_rot, levels.data(), keys.scales[t], ref.exact));
                    CHECK(std::fabs(scores[t] - ref.over_table) <=
                          query_bound(v, q_rot, levels.data(), keys.scales[t], ref.over_table));
                }
                CHECK(scores[n] == -12345.0f);  // nothing written past n
            }
        }
    });
    MESSAGE(tested << " variants with an integer path");
}

TEST_CASE("score_int: a zero query or one below 2^-120 scores 0, and a group scores each query bit for bit as alone") {
    tq::test::for_each_variant([](const tq_bit_kernels& v, const tq_kernels& k, const std::vector<float>& signs) {
        if (!v.score_int) return;
        const int d = v.head_dim;
        const Keys keys = encode_keys(v, signs, 37, 3);
        // Largest |q_i|: 0, just below 2^-120 (127 / max would overflow), subnormal.
        for (const float top : {0.0f, 0x1.fffffep-121f, 0x1p-140f}) {
            CAPTURE(top);
            auto q = tq::test::gaussian(d, 8);
            float m = 0;
            for (float x : q) m = std::max(m, std::fabs(x));
            for (float& x : q) x = x / m * top;
            std::vector<float> out(37, 1.0f);
            v.score_int(q.data(), 1, keys.codes.data(), keys.scales.data(), 37, out.data(), 37);
            for (float s : out) CHECK(s == 0.0f);
        }
        for (const std::size_t group : std::initializer_list<std::size_t>{2, 3, 4, 5, 8, 9}) {  // 8: one block of 8
            CAPTURE(group);
            const std::size_t n = 37, stride = n + 2;
            std::vector<float> q_rot(group * d), scores(group * stride, -12345.0f), alone(n);
            for (std::size_t j = 0; j < group; ++j) {
                const auto q = tq::test::gaussian(d, 40 + j);
                k.rotate(signs.data(), q.data(), &q_rot[j * d]);
            }
            v.score_int(q_rot.data(), group, keys.codes.data(), keys.scales.data(), n, scores.data(), stride);
            for (std::size_t j = 0; j < group; ++j) {
                v.score_int(&q_rot[j * d], 1, keys.codes.data(), keys.scales.data(), n, alone.data(), n);
                for (std::size_t t = 0; t < n; ++t) CHECK(scores[j * stride + t] == alone[t]);
                CHECK(scores[j * stride + n] == -12345.0f);
                CHECK(scores[j * stride + n + 1] == -12345.0f);
            }
        }
    });
}

// The largest sums the int32 arithmetic must hold: every level at the top (or the bottom),
// a flat query, so every Q_i = ±127 and T = ±127 where the top centroid defines the step
// (whole rates), and with the residual 254 Σ Q T + Σ R T = 254 · 127² · d (R = 0: the
// query is exact).  The scores stay within both bounds.
TEST_CASE("score_int: the extreme sums (every level at the top or bottom, a flat query) stay exact") {
    tq::test::for_each_variant([](const tq_bit_kernels& v, const tq_kernels&, const std::vector<float>&) {
        if (!v.score_int) return;
        const int d = v.head_dim;
        for (const bool top : {true, false}) {
            std::vector<std::uint8_t> levels(d), code(v.code_bytes);
            for (int i = 0; i < d; ++i) levels[i] = std::uint8_t(top ? (1 << tq::test::coord_bits(v, i)) - 1 : 0);
            v.pack(levels.data(), code.data());
            for (const float sign : {1.0f, -1.0f}) {
                CAPTURE(top);
                CAPTURE(sign);
                const std::vector<float> q(d, 0.25f * sign);
                const float scale = 3.0f;
                float score = 0;
                v.score_int(q.data(), 1, code.data(), &scale, 1, &score, 1);
                const Reference ref = reference(v, q, levels.data(), scale);
                CHECK(std::fabs(score - ref.exact) <= bound(v, q, levels.data(), scale, ref.exact));
                CHECK(std::fabs(score - ref.over_table) <= query_bound(v, q, levels.data(), scale, ref.over_table));
            }
        }
    });
}

TEST_CASE("score_int: fa_tq_config.score picks the path, refuses what it cannot do") {
    const tq_bit_kernels& v = tq::variants().front();
    const int d = v.head_dim;
    const float bits = tq::rate(v);
    fa_tq_config c = fa_tq_config_default();
    c.key_bits = c.value_bits = bits;
    int bad = 7;
    std::memcpy(&c.score, &bad, sizeof bad);
    CHECK(fa_tq_init(d, c, 1) == nullptr);
    CHECK(std::string(fa_tq_last_error()).find("config.score 7 is not an fa_tq_score") != std::string::npos);
    CHECK(fa_tq_config_default().score == FA_TQ_SCORE_FLOAT);
    // A compiled rate above 32 levels scores in integers (int16) but refuses the integer
    // value sum.
    for (const tq_bit_kernels& w : tq::variants()) {
        if (w.accumulate_int) continue;
        fa_tq_config big = fa_tq_config_default();
        big.key_bits = big.value_bits = tq::rate(w);
        big.score = FA_TQ_SCORE_INT8;
        fa_tq_state* s = fa_tq_init(w.head_dim, big, 1);
        CHECK(s != nullptr);
        fa_tq_free(s);
        big.value_sum = FA_TQ_VALUE_SUM_INT8;
        CHECK(fa_tq_init(w.head_dim, big, 1) == nullptr);
        CHECK(std::string(fa_tq_last_error()).find("needs value codebooks of at most 32 levels") != std::string::npos);
        break;
    }
}

// The cache attends with the integer path when asked: each score moves by at most the
// bound B_t (score_int's), so each softmax weight by a factor within e^{±2B}, and the
// output (a weighted mean of the decoded values) by at most (e^{2B} - 1) max|v̂|.
TEST_CASE("score_int: attention through the cache stays within the bound's reach of the float path") {
    tq::test::for_each_variant([](const tq_bit_kernels& v, const tq_kernels& k, const std::vector<float>& signs) {
        if (!v.score_int) return;
        const int d = v.head_dim, heads = 2, q_heads = 4, n = 50;
        const float bits = tq::rate(v);
        fa_tq_config c{bits, bits, FA_TQ_SCALE_DEFAULT, FA_TQ_SCALE_FORMAT_F32, FA_TQ_CENTER_NONE, 0, FA_TQ_NO_SINKS,
                       FA_TQ_SMOOTH_NONE, FA_TQ_SCORE_FLOAT, FA_TQ_VALUE_SUM_FLOAT};
        fa_tq_state* fs = fa_tq_init(d, c, tq::test::kSeed);
        c.score = FA_TQ_SCORE_INT8;
        fa_tq_state* is = fa_tq_init(d, c, tq::test::kSeed);
        REQUIRE(fs);
        REQUIRE(is);
        fa_tq_cache* fc = fa_tq_cache_new(fs, 1, heads, n);
        fa_tq_cache* ic = fa_tq_cache_new(is, 1, heads, n);
        const auto kv = tq::test::gaussian(std::size_t(2 * n) * heads * d, 21);
        const auto q = tq::test::gaussian(std::size_t(q_heads) * d, 22);
        std::vector<float> fo(std::size_t(q_heads) * d), io(fo.size());
        for (int p = 0; p < n; ++p) {
            const float* kp = &kv[std::size_t(2 * p) * heads * d];
            const float* vp = kp + std::size_t(heads) * d;
            REQUIRE(fa_tq_attention(fs, fc, 0, p, q.data(), q_heads, kp, vp, 0, fo.data()) == FA_TQ_OK);
            REQUIRE(fa_tq_attention(is, ic, 0, p, q.data(), q_heads, kp, vp, 0, io.data()) == FA_TQ_OK);
        }
        // B over every (query head, key), from what the cache returns (the decoded keys):
        // |s| (δ/2 ‖q'‖₁ + e_q Σ|c| + d e_q δ/2) = ‖r‖₁ e_q + |s| (δ/2) (‖q'‖₁ + d e_q),
        // r = the rotated decoded key (s c[levels]), |s| = ‖r‖₂ / ‖c[levels]‖₂ <= ‖r‖₂ / (√d c_min).
        const double step = table_step(v);
        double c_min = INFINITY;
        for (int i = 0; i < d; ++i)
            for (int l = 0; l < (1 << tq::test::coord_bits(v, i)); ++l)
                c_min = std::min(c_min, double(std::fabs(tq::test::coord_centroids(v, i)[l])));
        std::vector<float> keys(std::size_t(n) * heads * d), values(keys.size()), r(d), qr(d);
        REQUIRE(fa_tq_dequantize(fs, fc, 0, 0, n, true, keys.data()) != nullptr);
        REQUIRE(fa_tq_dequantize(fs, fc, 0, 0, n, false, values.data()) != nullptr);
        double B = 0, v_max = 0;
        for (float x : values) v_max = std::max(v_max, double(std::fabs(x)));
        for (int h = 0; h < q_heads; ++h) {
            k.rotate(signs.data(), &q[std::size_t(h) * d], qr.data());
            double q1 = 0, q_top = 0;
            for (float x : qr) {  // q' = R q / sqrt(d), the default softmax scale
                const double a = std::fabs(x) / std::sqrt(double(d));
                q1 += a;
                q_top = std::max(q_top, a);
            }
            const double e_q = q_top / max_level(v) * query_rounding(v) * (1 + 1e-6);
            const int g = h / (q_heads / heads);
            for (int t = 0; t < n; ++t) {
                // dequantize's layout: [position][head][d]
                k.rotate(signs.data(), &keys[(std::size_t(t) * heads + g) * d], r.data());
                double r1 = 0, r2 = 0;
                for (float x : r) r1 += std::fabs(x), r2 += double(x) * x;
                const double s = std::sqrt(r2) / (std::sqrt(double(d)) * c_min);
                B = std::max(B, r1 * e_q + s * step / 2 * (q1 + d * e_q));
            }
        }
        const double reach = std::expm1(2 * B * (1 + 1e-3)) * v_max + 1e-5 * v_max;  // + float rounding of both paths
        double diff = 0;
        for (std::size_t i = 0; i < fo.size(); ++i) diff = std::max(diff, double(std::fabs(fo[i] - io[i])));
        CAPTURE(B);
        CHECK(diff <= reach);
        CHECK(diff > 0);  // the integer path did run: its scores are not the float ones
        fa_tq_cache_free(fc);
        fa_tq_cache_free(ic);
        fa_tq_free(fs);
        fa_tq_free(is);
    });
}
