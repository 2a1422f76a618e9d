// fa_tq_attend_options: soft-capped scores, ALiBi biases and learned sinks, in the
// fused decode and prefill paths (one pass and flash-decoding chunks), equal to
// plain attention with the same shaping over the decoded cache.
#include "cache_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace {

struct FreeState {
    void operator()(fa_tq_state* s) const { fa_tq_free(s); }
};
struct FreeCache {
    void operator()(fa_tq_cache* c) const { fa_tq_cache_free(c); }
};
using StatePtr = std::unique_ptr<fa_tq_state, FreeState>;
using CachePtr = std::unique_ptr<fa_tq_cache, FreeCache>;

constexpr int kQHeads = 8, kKvHeads = 2;

// The shaping every case draws from: Gemma 2's cap, slopes as ggml derives them
// for 8 heads and a max bias of 8 (2^-(h+1)), sinks around the scores' scale.
struct Shapes {
    float softcap = 0;
    std::vector<float> slopes, sinks;
    fa_tq_attend_options options(float scale) const {
        return {scale, softcap, slopes.empty() ? nullptr : slopes.data(), sinks.empty() ? nullptr : sinks.data()};
    }
};

Shapes shapes(bool cap, bool alibi, bool sinks) {
    Shapes s;
    if (cap) s.softcap = 1.5f;  // below the scores' spread, so that the cap bends them
    for (int h = 0; alibi && h < kQHeads; ++h) s.slopes.push_back(std::ldexp(1.0f, -(h + 1)) * 0.25f);
    for (int h = 0; sinks && h < kQHeads; ++h) s.sinks.push_back(0.5f * float(h) - 1.0f);
    return s;
}

// Plain attention with the same shaping, in double, of query head rows q[kQHeads][d]
// at query position qpos over decoded keys and values [n][kKvHeads][d] at positions p0...
std::vector<float> reference(const float* q, int d, const float* keys, const float* values, int n, long p0, long qpos,
                             float scale, const Shapes& sh) {
    std::vector<float> out(std::size_t(kQHeads) * d);
    const int group = kQHeads / kKvHeads;
    for (int h = 0; h < kQHeads; ++h) {
        std::vector<double> s(static_cast<std::size_t>(n));
        double m = -INFINITY;
        for (int t = 0; t < n; ++t) {
            const float* k = keys + (std::size_t(t) * kKvHeads + h / group) * d;
            double x = 0;
            for (int i = 0; i < d; ++i) x += double(q[h * d + i]) * k[i];
            x *= scale;
            if (sh.softcap > 0) x = sh.softcap * std::tanh(x / sh.softcap);
            if (!sh.slopes.empty()) x -= sh.slopes[h] * double(qpos - (p0 + t));
            s[t] = x;
            m = std::max(m, x);
        }
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - m));
        if (!sh.sinks.empty()) sum += std::exp(sh.sinks[h] - m);
        for (int i = 0; i < d; ++i) {
            double o = 0;
            for (int t = 0; t < n; ++t) o += s[t] * values[(std::size_t(t) * kKvHeads + h / group) * d + i];
            out[std::size_t(h) * d + i] = float(o / sum);
        }
    }
    return out;
}

double worst_relative(const float* got, const std::vector<float>& want, int d) {
    double worst = 0;
    for (int h = 0; h < kQHeads; ++h) {
        const std::span<const float> o(got + h * d, d), w(&want[h * d], d);
        worst = std::max(worst, std::sqrt(tq::test::squared_distance(o, w) / tq::test::dot(w, w)));
    }
    return worst;
}

struct Setup {
    int d;
    StatePtr state;
    float scale;
};

Setup make_setup() {
    const int d = tq::test::main_head_dim();
    const bool k4v2 = tq::test::has_config(d, 4, 2);
    fa_tq_config config = fa_tq_config_default();  // centering, smoothing and exact sinks: every piece kind
    if (!k4v2) config.key_bits = config.value_bits = tq::rate(tq::variants().front());
    return {d, StatePtr(fa_tq_init(d, config, 17)), 1 / std::sqrt(float(d))};
}

// How a case writes its n positions: batched (fa_tq_attention_batch_ex, in two calls
// from `split` on if split > 0) or one fa_tq_attention_ex call each, with threads, in a
// linear cache or a ring of max_seq, attending over a sliding window if window > 0.
struct Run {
    bool batch;
    int threads, max_seq;
    bool ring = false;
    int split = 0, window = 0;
};

// The last token's output against the reference over the decoded cache (what it sees),
// and, batched in a linear cache without a window, every 37th token's over its prefix.
double shaped_vs_decoded(const Setup& su, const Shapes& sh, int n, const Run& run) {
    const int d = su.d;
    const bool batch = run.batch, ring = run.ring;
    const int max_seq = run.max_seq;
    CachePtr cache(ring ? fa_tq_cache_new_ring(su.state.get(), 1, kKvHeads, max_seq)
                        : fa_tq_cache_new(su.state.get(), 1, kKvHeads, max_seq));
    REQUIRE(fa_tq_cache_set_threads(cache.get(), run.threads) == FA_TQ_OK);
    REQUIRE(fa_tq_cache_set_window(cache.get(), run.window) == FA_TQ_OK);
    const std::size_t kv = std::size_t(kKvHeads) * d, qr = std::size_t(kQHeads) * d;
    const auto keys = tq::test::gaussian(std::size_t(n) * kv, 1), values = tq::test::gaussian(std::size_t(n) * kv, 2);
    auto q = tq::test::gaussian(std::size_t(n) * qr, 3);
    for (float& x : q) x *= 3;  // scores of a few units: the cap and the slopes matter
    std::vector<float> out(std::size_t(n) * qr);
    const fa_tq_attend_options opt = sh.options(su.scale);
    if (batch) {
        for (auto [p0, p1] : {std::pair{0, run.split > 0 ? run.split : n}, std::pair{run.split > 0 ? run.split : n, n}})
            if (p1 > p0)
                REQUIRE(fa_tq_attention_batch_ex(su.state.get(), cache.get(), 0, p0, p1 - p0, &q[p0 * qr], kQHeads,
                                                 &keys[p0 * kv], &values[p0 * kv], &opt, &out[p0 * qr]) == FA_TQ_OK);
    } else {
        for (int t = 0; t < n; ++t)
            REQUIRE(fa_tq_attention_ex(su.state.get(), cache.get(), 0, t, &q[t * qr], kQHeads, &keys[t * kv],
                                       &values[t * kv], &opt, &out[t * qr]) == FA_TQ_OK);
    }
    const int window = std::min({n, max_seq, run.window > 0 ? run.window : n}), first = n - window;
    std::vector<float> dk(std::size_t(window) * kv), dv(dk.size());
    REQUIRE(fa_tq_dequantize(su.state.get(), cache.get(), 0, first, window, true, dk.data()));
    REQUIRE(fa_tq_dequantize(su.state.get(), cache.get(), 0, first, window, false, dv.data()));
    double worst = worst_relative(&out[std::size_t(n - 1) * qr],
                                  reference(&q[std::size_t(n - 1) * qr], d, dk.data(), dv.data(), window, first, n - 1,
                                            su.scale, sh),
                                  d);
    if (batch && !ring && run.window == 0)  // every token over its prefix
        for (int t = 0; t < n; t += 37)
            worst = std::max(worst, worst_relative(&out[std::size_t(t) * qr],
                                                   reference(&q[std::size_t(t) * qr], d, dk.data(), dv.data(), t + 1,
                                                             0, t, su.scale, sh),
                                                   d));
    return worst;
}

}  // namespace

TEST_CASE("shaped scores: softcap, ALiBi and sinks equal plain shaped attention over the decoded cache") {
    const Setup su = make_setup();
    REQUIRE(su.state);
    for (int mask = 1; mask < 8; ++mask) {
        const Shapes sh = shapes(mask & 1, mask & 2, mask & 4);
        CAPTURE(mask);
        // decode token by token, one pass and flash-decoding's chunks merged
        CHECK(shaped_vs_decoded(su, sh, 300, {false, 1, 512}) < 1e-5);
        CHECK(shaped_vs_decoded(su, sh, 600, {false, 3, 1024}) < 1e-5);
        // prefill: fused tiles, and with 300 tokens the dense spans past the first 256;
        // a second call after 200 positions: its queries at positions 200 on
        CHECK(shaped_vs_decoded(su, sh, 300, {true, 2, 512}) < 1e-5);
        CHECK(shaped_vs_decoded(su, sh, 450, {true, 1, 512, false, 200}) < 1e-5);
        // a ring that wraps: positions as the cache counts them
        CHECK(shaped_vs_decoded(su, sh, 100, {true, 1, 64, true}) < 1e-5);
        // a sliding window: slots before it masked (scored -FLT_MAX, never shaped)
        CHECK(shaped_vs_decoded(su, sh, 700, {false, 3, 1024, false, 0, 300}) < 1e-5);
        CHECK(shaped_vs_decoded(su, sh, 400, {true, 1, 512, true, 0, 100}) < 1e-5);
    }
}

TEST_CASE("shaped scores: zeroed or NULL options are fa_tq_attention, bit for bit") {
    const Setup su = make_setup();
    const int d = su.d, n = 40;
    const std::size_t kv = std::size_t(kKvHeads) * d, qr = std::size_t(kQHeads) * d;
    const auto keys = tq::test::gaussian(n * kv, 4), values = tq::test::gaussian(n * kv, 5), q = tq::test::gaussian(qr, 6);
    CachePtr a(fa_tq_cache_new(su.state.get(), 1, kKvHeads, n)), b(fa_tq_cache_new(su.state.get(), 1, kKvHeads, n));
    std::vector<float> oa(qr), ob(qr);
    const fa_tq_attend_options zero{};
    for (int t = 0; t < n; ++t) {
        REQUIRE(fa_tq_attention(su.state.get(), a.get(), 0, t, q.data(), kQHeads, &keys[t * kv], &values[t * kv], 0,
                                oa.data()) == FA_TQ_OK);
        REQUIRE(fa_tq_attention_ex(su.state.get(), b.get(), 0, t, q.data(), kQHeads, &keys[t * kv], &values[t * kv],
                                   t % 2 ? &zero : nullptr, ob.data()) == FA_TQ_OK);
        REQUIRE(oa == ob);
    }
}

TEST_CASE("shaped scores: bad options are refused and write nothing") {
    const Setup su = make_setup();
    const int d = su.d;
    const std::size_t kv = std::size_t(kKvHeads) * d, qr = std::size_t(kQHeads) * d;
    const auto k = tq::test::gaussian(kv, 7), q = tq::test::gaussian(qr, 8);
    CachePtr cache(fa_tq_cache_new(su.state.get(), 1, kKvHeads, 16));
    std::vector<float> out(qr, 7.0f), nan_heads(kQHeads, 0.0f), huge(kQHeads, 1e36f);
    const std::vector<float> untouched = out;
    nan_heads[3] = NAN;
    const std::pair<fa_tq_attend_options, int> bad[] = {
        {{0, -1, nullptr, nullptr}, TQ_ERROR_INVALID_ARGUMENT},   {{0, INFINITY, nullptr, nullptr}, TQ_ERROR_INVALID_ARGUMENT},
        {{0, 0, nan_heads.data(), nullptr}, TQ_ERROR_NONFINITE}, {{0, 0, nullptr, nan_heads.data()}, TQ_ERROR_NONFINITE},
        {{-1, 0, nullptr, nullptr}, TQ_ERROR_INVALID_ARGUMENT}};
    for (const auto& [opt, status] : bad) {
        CHECK(fa_tq_attention_ex(su.state.get(), cache.get(), 0, 0, q.data(), kQHeads, k.data(), k.data(), &opt,
                                 out.data()) == status);
        CHECK(std::string(fa_tq_last_error()).find("fa_tq_attention_ex") == 0);
        CHECK(fa_tq_attention_batch_ex(su.state.get(), cache.get(), 0, 0, 1, q.data(), kQHeads, k.data(), k.data(),
                                       &opt, out.data()) == status);
        CHECK(fa_tq_cache_seq_len(cache.get()) == 0);
        CHECK(out == untouched);
    }
    // ALiBi's bias at the farthest distance must stay within float's reach.
    const fa_tq_attend_options far{0, 0, huge.data(), nullptr};
    const auto k16 = tq::test::gaussian(16 * kv, 9), q16 = tq::test::gaussian(16 * qr, 10);
    std::vector<float> out16(16 * qr, 7.0f);
    CHECK(fa_tq_attention_batch_ex(su.state.get(), cache.get(), 0, 0, 16, q16.data(), kQHeads, k16.data(), k16.data(),
                                   &far, out16.data()) == TQ_ERROR_RANGE);
    CHECK(fa_tq_cache_seq_len(cache.get()) == 0);
    CHECK(std::all_of(out16.begin(), out16.end(), [](float x) { return x == 7.0f; }));
}

TEST_CASE("shaped scores: tq::KVCache's overloads are the C calls") {
    const int d = tq::test::main_head_dim();
    const auto& v = tq::variants().front();
    const tq::Quantizer quant(d, {tq::rate(v), tq::rate(v)}, 5);
    const std::size_t kv = std::size_t(kKvHeads) * d, qr = std::size_t(kQHeads) * d;
    const auto k = tq::test::gaussian(3 * kv, 11), q = tq::test::gaussian(3 * qr, 12);
    const Shapes sh = shapes(true, true, true);
    const fa_tq_attend_options opt = sh.options(0);
    tq::KVCache a(quant, 1, kKvHeads, 8), b(quant, 1, kKvHeads, 8);
    std::vector<float> oa(3 * qr), ob(3 * qr);
    a.attention_batch(0, 0, 3, q, k, k, oa, opt);
    CachePtr c(fa_tq_cache_new(quant.get(), 1, kKvHeads, 8));
    REQUIRE(fa_tq_attention_batch_ex(quant.get(), c.get(), 0, 0, 3, q.data(), kQHeads, k.data(), k.data(), &opt,
                                     ob.data()) == FA_TQ_OK);
    CHECK(oa == ob);
    b.attention_batch(0, 0, 2, {q.data(), 2 * qr}, {k.data(), 2 * kv}, {k.data(), 2 * kv}, {ob.data(), 2 * qr}, opt);
    b.attention(0, 2, {&q[2 * qr], qr}, {&k[2 * kv], kv}, {&k[2 * kv], kv}, {&ob[2 * qr], qr}, opt);
    CHECK(std::equal(oa.begin() + 2 * qr, oa.end(), ob.begin() + 2 * qr,
                     [](float x, float y) { return std::abs(x - y) <= 1e-5f * (1 + std::abs(y)); }));
    const fa_tq_attend_options bad{0, -1, nullptr, nullptr};
    CHECK_THROWS_AS(b.attention(0, 3, {q.data(), qr}, {k.data(), kv}, {k.data(), kv}, {ob.data(), qr}, bad), tq::Error);
}
