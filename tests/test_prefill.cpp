// fa_tq_attention_batch (prefill): the cache ends byte for byte as n_tokens
// fa_tq_attention calls leave it, out equals theirs to float rounding, on every
// executor; and a refused token leaves cache and out as they were.
#include "cache_snapshot.hpp"
#include "cache_support.hpp"

#include <doctest/doctest.h>

#include <cstring>

namespace {

struct Inputs {
    std::vector<float> q, k, v;  // [token][head][d]
    Inputs(int tokens, int q_heads, int kv_heads, int d, std::uint64_t seed)
        : q(tq::test::gaussian(std::size_t(tokens) * q_heads * d, seed)),
          k(tq::test::gaussian(std::size_t(tokens) * kv_heads * d, seed + 1)),
          v(tq::test::gaussian(std::size_t(tokens) * kv_heads * d, seed + 2)) {}
};

struct Case {
    int q_heads, kv_heads, max_seq;
    bool ring;
    int before, pos, n_tokens;  // `before` positions by single calls, then a batch at pos
};

fa_tq_cache* new_cache(const fa_tq_state* s, const Case& c, int threads) {
    fa_tq_cache* cache = c.ring ? fa_tq_cache_new_ring(s, 1, c.kv_heads, c.max_seq) : fa_tq_cache_new(s, 1, c.kv_heads, c.max_seq);
    REQUIRE(cache);
    REQUIRE(fa_tq_cache_set_threads(cache, threads) == FA_TQ_OK);
    return cache;
}

// Runs the case on two caches, one by single calls and one with the batch; returns
// the worst relative difference of the batch's outputs, and checks the caches' bytes.
double batch_vs_single(const fa_tq_state* s, int d, const Case& c, int threads) {
    const int total = std::max(c.before, c.pos + c.n_tokens);
    const Inputs in(total, c.q_heads, c.kv_heads, d, 77);
    const std::size_t q_row = std::size_t(c.q_heads) * d, kv_row = std::size_t(c.kv_heads) * d;
    fa_tq_cache* single = new_cache(s, c, threads);
    fa_tq_cache* batched = new_cache(s, c, threads);
    std::vector<float> want(std::size_t(c.n_tokens) * q_row), got(want.size()), scratch(q_row);
    for (int t = 0; t < c.before; ++t)
        for (fa_tq_cache* cache : {single, batched})
            REQUIRE(fa_tq_attention(s, cache, 0, t, &in.q[t * q_row], c.q_heads, &in.k[t * kv_row], &in.v[t * kv_row],
                                    0.0f, scratch.data()) == FA_TQ_OK);
    for (int i = 0; i < c.n_tokens; ++i) {
        const std::size_t t = std::size_t(c.pos + i);
        REQUIRE(fa_tq_attention(s, single, 0, int(t), &in.q[t * q_row], c.q_heads, &in.k[t * kv_row],
                                &in.v[t * kv_row], 0.0f, &want[i * q_row]) == FA_TQ_OK);
    }
    const std::size_t p = std::size_t(c.pos);
    REQUIRE(fa_tq_attention_batch(s, batched, 0, c.pos, c.n_tokens, &in.q[p * q_row], c.q_heads, &in.k[p * kv_row],
                                  &in.v[p * kv_row], 0.0f, got.data()) == FA_TQ_OK);
    CHECK(tq::test::Snapshot(batched) == tq::test::Snapshot(single));
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); i += d) {
        const std::span<const float> g(&got[i], d), w(&want[i], d);
        worst = std::max(worst, std::sqrt(tq::test::squared_distance(g, w) / tq::test::dot(w, w)));
    }
    fa_tq_cache_free(single);
    fa_tq_cache_free(batched);
    return worst;
}

}  // namespace

TEST_CASE("prefill: a batch leaves the cache of n_tokens single calls, and their outputs to float rounding") {
    const int d = tq::test::main_head_dim();
    if (!tq::test::has_config(d, 4, 2)) return;
    fa_tq_config plain = tq::test::config(4, 2, FA_TQ_SCALE_FORMAT_F32, FA_TQ_CENTER_NONE, 0, FA_TQ_NO_SINKS,
                                          FA_TQ_SMOOTH_NONE);
    fa_tq_state* levers = fa_tq_init(d, tq::test::config(4, 2), 5);  // centered, smoothed, a sink, half scales
    fa_tq_state* none = fa_tq_init(d, plain, 5);
    fa_tq_config int8 = tq::test::config(4, 2);  // the levers, scored by the integer path
    int8.score = FA_TQ_SCORE_INT8;
    fa_tq_state* integer = fa_tq_init(d, int8, 5);
    // Values centered too, two sinks and lever blocks of 64: a dense span's product blocks
    // run across lever blocks of keys and values, each with its own mean.
    fa_tq_state* both = fa_tq_init(
        d, tq::test::config(4, 2, FA_TQ_SCALE_FORMAT_F32, FA_TQ_CENTER_BOTH, 64, 2, FA_TQ_SMOOTH_KEYS), 5);
    REQUIRE(levers);
    REQUIRE(none);
    REQUIRE(integer);
    REQUIRE(both);
    const Case cases[] = {
        {4, 4, 1024, false, 0, 0, 600},   // a prompt: 3 tiles of 256 tokens (one head per KV head), spans of 256
        {6, 2, 1024, false, 0, 0, 600},   // tiles of 85 tokens (3 heads per KV head) that straddle spans
        {128, 128, 512, false, 0, 0, 300},  // 128 KV heads: 1 tile task per head, running both tiles
        {8, 2, 1024, false, 37, 37, 17},  // after 37 decode steps
        {4, 1, 1024, false, 50, 20, 33},  // rewrites positions 20..52 of 50
        {6, 3, 64, true, 10, 10, 40},     // a ring that does not wrap
        {8, 4, 64, true, 50, 50, 40},     // a ring that wraps in the call: token by token
        {4, 2, 1024, false, 30, 30, 7},   // a tile of 14 rows: the fused kernels, not the dense product
        {4, 2, 1024, false, 0, 0, 1},
    };
    for (const fa_tq_state* s : {levers, none, integer, both})
        for (const Case& c : cases)
            for (int threads : {1, 3}) {
                const bool first_span = std::max(c.before, c.pos + c.n_tokens) <= FA_TQ_PARALLEL_CHUNK;
                // Past the first span the integer path's single calls score in int8 and the
                // batch's dense spans in float: within that path's bound (test_score_int.cpp),
                // not rounding.  Within it both run the same integer kernels.
                if (s == integer && !first_span) continue;
                CAPTURE(c.q_heads);
                CAPTURE(c.kv_heads);
                CAPTURE(c.ring);
                CAPTURE(c.pos);
                CAPTURE(c.n_tokens);
                CAPTURE(threads);
                // Up to 256 positions the batch gives the single calls' bits, dense tiles
                // included (their first span runs the fused kernels), so that a sequence's
                // outputs do not depend on how its tokens were split into calls (llama.cpp's
                // server test); past them the batch rescales its running output per span of
                // 256 (online softmax) and multiplies dense tiles' decoded spans, in another
                // order than one pass or than the decode merge: measured below 2e-6.
                const double worst = batch_vs_single(s, d, c, threads);
                if (first_span)
                    CHECK(worst == 0);
                else
                    CHECK(worst < 1e-5);
            }
    fa_tq_free(levers);
    fa_tq_free(none);
    fa_tq_free(integer);
    fa_tq_free(both);
}

TEST_CASE("prefill: a refused token leaves the cache and out as they were") {
    const int d = tq::test::main_head_dim();
    const auto& v = tq::variants().front();
    fa_tq_state* s = fa_tq_init(d, tq::test::config(tq::rate(v), tq::rate(v)), 3);
    REQUIRE(s);
    for (bool ring : {false, true}) {
        CAPTURE(ring);
        const int kv = 2, qh = 4, n = 24, pos = 30;
        fa_tq_cache* cache = ring ? fa_tq_cache_new_ring(s, 1, kv, 40) : fa_tq_cache_new(s, 1, kv, 64);
        REQUIRE(cache);
        Inputs in(pos + n, qh, kv, d, 9);
        const std::size_t q_row = std::size_t(qh) * d, kv_row = std::size_t(kv) * d;
        std::vector<float> out(std::size_t(n) * q_row);
        for (int t = 0; t < pos; ++t)
            REQUIRE(fa_tq_attention(s, cache, 0, t, &in.q[t * q_row], qh, &in.k[t * kv_row], &in.v[t * kv_row], 0.0f,
                                    out.data()) == FA_TQ_OK);
        const tq::test::Snapshot before(cache);
        auto batch = [&](const Inputs& x) {
            std::fill(out.begin(), out.end(), 1234.5f);
            return fa_tq_attention_batch(s, cache, 0, pos, n, &x.q[pos * q_row], qh, &x.k[pos * kv_row],
                                         &x.v[pos * kv_row], 0.0f, out.data());
        };
        auto untouched = [&] {
            return tq::test::Snapshot(cache) == before &&
                   std::all_of(out.begin(), out.end(), [](float x) { return x == 1234.5f; });
        };
        Inputs bad_key = in;  // token 13's key is NaN: tokens 0..12 were written, then undone
        bad_key.k[(pos + 13) * kv_row + 5] = NAN;
        CHECK(batch(bad_key) == TQ_ERROR_NONFINITE);
        CHECK(untouched());
        Inputs huge = in;  // token 20's value beyond TQ_MAX_NORM
        huge.v[(pos + 20) * kv_row] = float(2 * TQ_MAX_NORM(d));
        CHECK(batch(huge) == TQ_ERROR_RANGE);
        CHECK(untouched());
        Inputs bad_query = in;
        bad_query.q[(pos + 7) * q_row] = INFINITY;
        CHECK(batch(bad_query) == TQ_ERROR_NONFINITE);
        CHECK(untouched());
        std::fill(out.begin(), out.end(), 1234.5f);
        CHECK(fa_tq_attention_batch(s, cache, 0, pos, 0, in.q.data(), qh, in.k.data(), in.v.data(), 0.0f,
                                    out.data()) == TQ_ERROR_INVALID_ARGUMENT);
        CHECK(std::string(fa_tq_last_error()).find("n_tokens must be >= 1") != std::string::npos);
        if (!ring) {
            CHECK(fa_tq_attention_batch(s, cache, 0, pos, 64 - pos + 1, in.q.data(), qh, in.k.data(), in.v.data(),
                                        0.0f, out.data()) == TQ_ERROR_INVALID_ARGUMENT);
            CHECK(std::string(fa_tq_last_error()).find("run past max_seq_len 64") != std::string::npos);
        }
        CHECK(untouched());
        CHECK(batch(in) == FA_TQ_OK);  // and the good batch goes through
        CHECK(fa_tq_cache_seq_len(cache) == pos + n);
        fa_tq_cache_free(cache);
    }
    fa_tq_free(s);
}
