// The integer value sum (accumulate_int): within the bound docs/kernels.md derives from
// its byte roundings of the weights and int8 roundings of the centroids, against the
// exact sum over the decoded levels, for every variant that has one; each query of a
// group summed bit for bit as alone; chosen by fa_tq_config.value_sum, and the cache's
// attention within that bound's reach of the float path.
#include "test_support.hpp"
#include "turboquant/turboquant.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>

namespace {

constexpr std::size_t kChunk = 64;  // isa/int8.hpp kWeightChunk: values per weight scale

struct Values {
    std::vector<std::uint8_t> codes;
    std::vector<float> scales;
};

Values encode_values(const tq_bit_kernels& v, const std::vector<float>& signs, std::size_t n, std::uint64_t seed) {
    const int d = v.head_dim;
    const auto x = tq::test::gaussian(n * d, seed);
    Values out{std::vector<std::uint8_t>(n * v.code_bytes), std::vector<float>(n)};
    for (std::size_t t = 0; t < n; ++t)
        REQUIRE(v.encode(signs.data(), &x[t * d], TQ_SCALE_LEAST_SQUARES, &out.codes[t * v.code_bytes], &out.scales[t]) ==
                TQ_OK);
    return out;
}

// The int8 tables' step (docs/kernels.md): the variant's largest centroid magnitude over 127.
float int8_step(const tq_bit_kernels& v) {
    float top = v.centroids[(1 << v.bits) - 1];
    if (v.high_coords) top = std::max(top, v.high_centroids[(2 << v.bits) - 1]);
    return top / 127.0f;
}

// Softmax-like weights: positive, summing to 1, some near 0, one position dominant
// where `peaked` (a coarse byte scale for the others in its chunk).
std::vector<float> weights(std::size_t n, std::uint64_t seed, bool peaked) {
    std::mt19937_64 rng(seed);
    std::exponential_distribution<float> e(1.0f);
    std::vector<float> w(n);
    float sum = 0;
    for (auto& x : w) sum += x = e(rng) * e(rng);
    if (peaked && n) sum += w[n / 2] *= 200;
    for (auto& x : w) x /= sum;
    return w;
}

}  // namespace

// Per coordinate i and chunk k of values t, with p_t = w_t s_t (float, as the kernel
// forms it), s = max p / 254 and e_w = s (1/2 + 2^-14) (int8::quantize_weights), c the
// exact centroids and δ the tables' step:
//   |Σ p_t c_ti - s δ Σ U_t T_ti| <= e_w Σ_t |c_ti| + (δ/2) Σ_t (p_t + e_w),
// as p c - sU δT = (p - sU) c + sU (c - δT) with |c - δT| <= δ/2 and sU <= p + e_w;
// plus the chunk's float steps: s δ and the fused add each round once (2^-24 of the
// chunk's sum or of the running total; s's own rounding is in e_w).
TEST_CASE("accumulate_int: within the bound of its roundings, for every variant that has it") {
    int tested = 0;
    tq::test::for_each_variant([&](const tq_bit_kernels& v, const tq_kernels&, const std::vector<float>& signs) {
        const bool expected = v.bits + (v.high_coords ? 1 : 0) <= 5;
        const bool has_int = v.accumulate_int != nullptr;
        CHECK(has_int == expected);  // 32 levels at most: two byte shuffles
        CHECK(bool(v.score_int));  // the score has an integer path at every rate
        if (!v.accumulate_int) return;
        ++tested;
        const int d = v.head_dim;
        const double step = int8_step(v);
        for (std::size_t n : {0, 1, 3, 4, 5, 63, 64, 65, 130}) {
            CAPTURE(n);
            const Values vals = encode_values(v, signs, n, 31 + n);
            std::vector<std::vector<float>> c(n);  // the exact centroids of each value's levels
            std::vector<std::uint8_t> levels(d);
            for (std::size_t t = 0; t < n; ++t) {
                v.unpack(&vals.codes[t * v.code_bytes], levels.data());
                for (int i = 0; i < d; ++i) c[t].push_back(tq::test::coord_centroids(v, i)[levels[i]]);
            }
            for (const bool peaked : {false, true}) {
                CAPTURE(peaked);
                const auto w = weights(n, 7 + n, peaked);
                const auto start = tq::test::gaussian(d, 9);  // accumulate_int adds to what is there
                std::vector<float> acc(d + 3, -12345.0f);
                std::copy(start.begin(), start.end(), acc.begin());
                v.accumulate_int(w.data(), n, 1, vals.codes.data(), vals.scales.data(), n, acc.data(), std::size_t(d));
                std::vector<double> exact(start.begin(), start.end()), bound(d, 0.0), size(d);
                for (int i = 0; i < d; ++i) size[i] = std::fabs(start[i]);
                std::size_t chunks = 0;
                for (std::size_t t0 = 0; t0 < n; t0 += kChunk, ++chunks) {
                    const std::size_t t1 = std::min(n, t0 + kChunk);
                    float top = 0;
                    for (std::size_t t = t0; t < t1; ++t) top = std::max(top, w[t] * vals.scales[t]);
                    const double e_w = double(top / 254.0f) * (0.5 + 0x1p-14);
                    for (std::size_t t = t0; t < t1; ++t) {
                        const double p = w[t] * vals.scales[t];
                        for (int i = 0; i < d; ++i) {
                            exact[i] += p * c[t][i];
                            bound[i] += e_w * std::fabs(c[t][i]) + step / 2 * (p + e_w);
                            size[i] += (p + e_w) * (std::fabs(c[t][i]) + step / 2);
                        }
                    }
                }
                for (int i = 0; i < d; ++i) {
                    CAPTURE(i);
                    const double b = bound[i] * (1 + 1e-6) + 0x1p-22 * double(chunks + 1) * size[i];
                    CHECK(std::fabs(acc[i] - exact[i]) <= b);
                }
                for (int i = d; i < d + 3; ++i) CHECK(acc[i] == -12345.0f);  // nothing written past d
            }
        }
    });
    MESSAGE(tested << " variants with an integer value sum");
}

TEST_CASE("accumulate_int: zero weights add nothing, and a group sums each query bit for bit as alone") {
    tq::test::for_each_variant([](const tq_bit_kernels& v, const tq_kernels&, const std::vector<float>& signs) {
        if (!v.accumulate_int) return;
        const int d = v.head_dim;
        const std::size_t n = 137;  // two whole chunks and a partial one
        const Values vals = encode_values(v, signs, n, 3);
        {  // zero weights: acc as it was
            const std::vector<float> w(n, 0.0f), start = tq::test::gaussian(d, 4);
            std::vector<float> acc = start;
            v.accumulate_int(w.data(), n, 1, vals.codes.data(), vals.scales.data(), n, acc.data(), std::size_t(d));
            CHECK(acc == start);
        }
        {  // every weight x scale below 2^-120, where 254 / max would overflow: s_w = 0, nothing
           // added (without the guard a zero acc would get products of about 2^-122)
            const float s_max = *std::max_element(vals.scales.begin(), vals.scales.end());
            const std::vector<float> w(n, 0x1p-122f / s_max);
            std::vector<float> acc(d, 0.0f);
            v.accumulate_int(w.data(), n, 1, vals.codes.data(), vals.scales.data(), n, acc.data(), std::size_t(d));
            for (float a : acc) CHECK(a == 0.0f);
        }
        for (const std::size_t group : std::initializer_list<std::size_t>{2, 3, 4, 5, 8, 9}) {
            CAPTURE(group);
            const std::size_t w_stride = n + 5, a_stride = std::size_t(d) + 2;
            std::vector<float> w(group * w_stride), acc(group * a_stride, -12345.0f);
            for (std::size_t j = 0; j < group; ++j) {
                const auto wj = weights(n, 50 + j, j % 2 == 1);
                std::copy(wj.begin(), wj.end(), &w[j * w_stride]);
                std::fill(&acc[j * a_stride], &acc[j * a_stride] + d, 0.0f);
            }
            v.accumulate_int(w.data(), w_stride, group, vals.codes.data(), vals.scales.data(), n, acc.data(), a_stride);
            for (std::size_t j = 0; j < group; ++j) {
                std::vector<float> alone(d, 0.0f);
                v.accumulate_int(&w[j * w_stride], n, 1, vals.codes.data(), vals.scales.data(), n, alone.data(), std::size_t(d));
                CHECK(std::equal(alone.begin(), alone.end(), &acc[j * a_stride]));
                CHECK(acc[j * a_stride + d] == -12345.0f);
                CHECK(acc[j * a_stride + d + 1] == -12345.0f);
            }
        }
    });
}

TEST_CASE("accumulate_int: fa_tq_config.value_sum picks the path, refuses what it cannot do") {
    const tq_bit_kernels& v = tq::variants().front();
    fa_tq_config c = fa_tq_config_default();
    c.key_bits = c.value_bits = tq::rate(v);
    int bad = 9;
    std::memcpy(&c.value_sum, &bad, sizeof bad);
    CHECK(fa_tq_init(v.head_dim, c, 1) == nullptr);
    CHECK(std::string(fa_tq_last_error()).find("config.value_sum 9 is not an fa_tq_value_sum") != std::string::npos);
    CHECK(fa_tq_config_default().value_sum == FA_TQ_VALUE_SUM_FLOAT);
    // A compiled value rate without an integer path (codebooks above 32 levels) refuses INT8.
    for (const tq_bit_kernels& w : tq::variants()) {
        if (w.accumulate_int) continue;
        fa_tq_config big = fa_tq_config_default();
        big.key_bits = big.value_bits = tq::rate(w);
        big.value_sum = FA_TQ_VALUE_SUM_INT8;
        CHECK(fa_tq_init(w.head_dim, big, 1) == nullptr);
        CHECK(std::string(fa_tq_last_error()).find("needs value codebooks of at most 32 levels") != std::string::npos);
        big.value_sum = FA_TQ_VALUE_SUM_DEFAULT;
        fa_tq_state* s = fa_tq_init(w.head_dim, big, 1);
        CHECK(s != nullptr);
        fa_tq_free(s);
        break;
    }
}

// The cache sums with the integer path when asked.  Both caches score in float, so
// their weights are the same (normalized: Σ w = 1, w <= 1), and per rotated coordinate
// the kernel test's bound is at most s_max (n c_max (1/2 + 2^-14) / 254 + (δ/2)(1 + n (1/2
// + 2^-14) / 254)), s_max the largest value scale (<= ‖v̂‖₂ / (√d c_min), as score_int's
// test bounds |s|); the inverse rotation keeps the L2 norm: ‖Δo‖∞ <= √d that bound.
TEST_CASE("accumulate_int: attention through the cache stays within the bound's reach of the float path") {
    tq::test::for_each_variant([](const tq_bit_kernels& v, const tq_kernels&, const std::vector<float>&) {
        if (!v.accumulate_int) return;
        const int d = v.head_dim, heads = 2, q_heads = 4, n = 150;
        const float bits = tq::rate(v);
        fa_tq_config c{bits, bits, FA_TQ_SCALE_DEFAULT, FA_TQ_SCALE_FORMAT_F32, FA_TQ_CENTER_NONE, 0, FA_TQ_NO_SINKS,
                       FA_TQ_SMOOTH_NONE, FA_TQ_SCORE_FLOAT, FA_TQ_VALUE_SUM_FLOAT};
        fa_tq_state* fs = fa_tq_init(d, c, tq::test::kSeed);
        c.value_sum = FA_TQ_VALUE_SUM_INT8;
        fa_tq_state* is = fa_tq_init(d, c, tq::test::kSeed);
        REQUIRE(fs);
        REQUIRE(is);
        fa_tq_cache* fc = fa_tq_cache_new(fs, 1, heads, n);
        fa_tq_cache* ic = fa_tq_cache_new(is, 1, heads, n);
        const auto kv = tq::test::gaussian(std::size_t(2 * n) * heads * d, 23);
        const auto q = tq::test::gaussian(std::size_t(q_heads) * d, 24);
        std::vector<float> fo(std::size_t(q_heads) * d), io(fo.size());
        for (int p = 0; p < n; ++p) {
            const float* kp = &kv[std::size_t(2 * p) * heads * d];
            const float* vp = kp + std::size_t(heads) * d;
            REQUIRE(fa_tq_attention(fs, fc, 0, p, q.data(), q_heads, kp, vp, 0, fo.data()) == FA_TQ_OK);
            REQUIRE(fa_tq_attention(is, ic, 0, p, q.data(), q_heads, kp, vp, 0, io.data()) == FA_TQ_OK);
        }
        double c_min = INFINITY, c_max = 0;
        for (int i = 0; i < d; ++i)
            for (int l = 0; l < (1 << tq::test::coord_bits(v, i)); ++l) {
                const double a = std::fabs(tq::test::coord_centroids(v, i)[l]);
                c_min = std::min(c_min, a);
                c_max = std::max(c_max, a);
            }
        std::vector<float> values(std::size_t(n) * heads * d);
        REQUIRE(fa_tq_dequantize(fs, fc, 0, 0, n, false, values.data()) != nullptr);
        double s_max = 0;
        for (std::size_t t = 0; t < std::size_t(n) * heads; ++t) {
            double r2 = 0;
            for (int i = 0; i < d; ++i) r2 += double(values[t * d + i]) * values[t * d + i];
            s_max = std::max(s_max, std::sqrt(r2) / (std::sqrt(double(d)) * c_min));
        }
        const double e = (0.5 + 0x1p-14) / 254, step = int8_step(v);
        const double B = s_max * (n * c_max * e + step / 2 * (1 + n * e));
        double diff = 0, v_max = 0;
        for (std::size_t i = 0; i < fo.size(); ++i) {
            diff = std::max(diff, double(std::fabs(fo[i] - io[i])));
            v_max = std::max(v_max, double(std::fabs(fo[i])));
        }
        CAPTURE(B);
        CHECK(diff <= std::sqrt(double(d)) * B * (1 + 1e-3) + 1e-5 * v_max);  // + float rounding of both paths
        CHECK(diff > 0);  // the integer path did run
        fa_tq_cache_free(fc);
        fa_tq_cache_free(ic);
        fa_tq_free(fs);
        fa_tq_free(is);
    });
}
