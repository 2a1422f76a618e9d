// fa_tq_attention_batch over a short history (one span, one decode chunk) gives the
// bits of n_tokens successive fa_tq_attention calls, on the ISA the suite runs: a
// speculative decoder checks its drafted tokens as one batch, and its greedy tokens
// must be those of decoding one token at a time.
#include "cache_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <utility>

namespace {

// The first index where a and b differ bitwise, or -1.
long first_difference(const std::vector<float>& a, const std::vector<float>& b) {
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return long(i);
    return -1;
}

}  // namespace

TEST_CASE("prefill: a short batch gives the bits of successive single calls, every group size") {
    struct Shape {
        int q_heads, kv_heads;
    };
    // A group of 1, 2, 3 (SmolLM2's 9 over 3), 4 (Gemma 3's), 8, and 6 (an 8-query block and a rest).
    const Shape shapes[] = {{2, 2}, {4, 2}, {9, 3}, {4, 1}, {8, 1}, {6, 1}};
    // Positions decoded before the batch, and the batch's tokens: a draft after a short prompt.
    const int befores[] = {0, 5, 23, 40};
    const int batches[] = {2, 5, 17};
    const float value_bits[] = {2, 4};  // the default config's, and the llama.cpp tq4 type's
    std::vector<int> dims;
    for (const auto& v : tq::variants())
        if (std::find(dims.begin(), dims.end(), v.head_dim) == dims.end()) dims.push_back(v.head_dim);
    for (int d : dims)
        for (float vb : value_bits) {
            if (!tq::test::has_config(d, 4, vb)) continue;
            fa_tq_config config = fa_tq_config_default();  // centered keys, blocks of 128, a sink, smoothed keys
            config.key_bits = 4;
            config.value_bits = vb;
            fa_tq_state* s = fa_tq_init(d, config, 11);
            REQUIRE(s);
            for (const Shape& sh : shapes)
                for (int before : befores)
                    for (int n : batches) {
                        CAPTURE(d);
                        CAPTURE(vb);
                        CAPTURE(sh.q_heads);
                        CAPTURE(sh.kv_heads);
                        CAPTURE(before);
                        CAPTURE(n);
                        const int total = before + n;
                        const std::size_t q_row = std::size_t(sh.q_heads) * d, kv_row = std::size_t(sh.kv_heads) * d;
                        const auto q = tq::test::gaussian(std::size_t(total) * q_row, 101 + before);
                        const auto k = tq::test::gaussian(std::size_t(total) * kv_row, 202 + n);
                        const auto v = tq::test::gaussian(std::size_t(total) * kv_row, 303);
                        fa_tq_cache* single = fa_tq_cache_new(s, 1, sh.kv_heads, 64);
                        fa_tq_cache* batched = fa_tq_cache_new(s, 1, sh.kv_heads, 64);
                        REQUIRE(single);
                        REQUIRE(batched);
                        std::vector<float> want(std::size_t(n) * q_row), got(want.size()), scratch(q_row);
                        for (int t = 0; t < before; ++t)
                            for (fa_tq_cache* c : {single, batched})
                                REQUIRE(fa_tq_attention(s, c, 0, t, &q[t * q_row], sh.q_heads, &k[t * kv_row],
                                                        &v[t * kv_row], 0.0f, scratch.data()) == FA_TQ_OK);
                        for (int i = 0; i < n; ++i) {
                            const std::size_t t = std::size_t(before + i);
                            REQUIRE(fa_tq_attention(s, single, 0, int(t), &q[t * q_row], sh.q_heads, &k[t * kv_row],
                                                    &v[t * kv_row], 0.0f, &want[i * q_row]) == FA_TQ_OK);
                        }
                        const std::size_t p = std::size_t(before);
                        REQUIRE(fa_tq_attention_batch(s, batched, 0, before, n, &q[p * q_row], sh.q_heads,
                                                      &k[p * kv_row], &v[p * kv_row], 0.0f, got.data()) == FA_TQ_OK);
                        const long at = first_difference(got, want);
                        CAPTURE(at);
                        if (at >= 0) {
                            CAPTURE(got[std::size_t(at)]);
                            CAPTURE(want[std::size_t(at)]);
                            CHECK(at < 0);  // token at / q_row, head at % q_row / d
                        }
                        fa_tq_cache_free(single);
                        fa_tq_cache_free(batched);
                    }
            fa_tq_free(s);
        }
}

namespace {

// A speculative decoder's loop on a cache of 3 KV heads (SmolLM2's 9 query heads): a
// prompt batch, then per step the next token, `accept` of the tokens after it and
// junk drafts in one batch, the drafts truncated, the next batch from there.  Returns
// the first float where its accepted rows differ bitwise from decoding one token at a
// time (-1: none), and the worst relative difference of a row.
std::pair<long, double> drafts_vs_single(const fa_tq_state* s, int d, int accept) {
    const int q_heads = 9, kv_heads = 3, prompt = 8, steps = 24, drafts = 8;
    const std::size_t q_row = std::size_t(q_heads) * d, kv_row = std::size_t(kv_heads) * d;
    const int total = prompt + steps;
    const auto q = tq::test::gaussian(std::size_t(total) * q_row, 1);
    const auto k = tq::test::gaussian(std::size_t(total) * kv_row, 2);
    const auto v = tq::test::gaussian(std::size_t(total) * kv_row, 3);
    const auto junk_q = tq::test::gaussian(std::size_t(drafts) * q_row, 4);
    const auto junk_k = tq::test::gaussian(std::size_t(drafts) * kv_row, 5);
    const auto junk_v = tq::test::gaussian(std::size_t(drafts) * kv_row, 6);
    fa_tq_cache* plain = fa_tq_cache_new(s, 1, kv_heads, 64);
    fa_tq_cache* spec = fa_tq_cache_new(s, 1, kv_heads, 64);
    REQUIRE(plain);
    REQUIRE(spec);
    std::vector<float> want(std::size_t(total) * q_row), got(want.size());
    for (fa_tq_cache* c : {plain, spec})  // the prompt: one batch
        REQUIRE(fa_tq_attention_batch(s, c, 0, 0, prompt, q.data(), q_heads, k.data(), v.data(), 0.0f,
                                      (c == plain ? want : got).data()) == FA_TQ_OK);
    for (int t = prompt; t < total; ++t)
        REQUIRE(fa_tq_attention(s, plain, 0, t, &q[t * q_row], q_heads, &k[t * kv_row], &v[t * kv_row], 0.0f,
                                &want[t * q_row]) == FA_TQ_OK);
    for (int t = prompt; t < total;) {
        const int real = std::min(1 + accept, total - t), n = real + drafts - accept;
        std::vector<float> bq(std::size_t(n) * q_row), bk(std::size_t(n) * kv_row), bv(bk.size()), out(bq.size());
        const auto cut = [](std::size_t rows) { return std::ptrdiff_t(rows); };
        std::copy_n(&q[t * q_row], real * q_row, bq.begin());
        std::copy_n(&k[t * kv_row], real * kv_row, bk.begin());
        std::copy_n(&v[t * kv_row], real * kv_row, bv.begin());
        std::copy_n(junk_q.begin(), (n - real) * q_row, bq.begin() + cut(real * q_row));
        std::copy_n(junk_k.begin(), (n - real) * kv_row, bk.begin() + cut(real * kv_row));
        std::copy_n(junk_v.begin(), (n - real) * kv_row, bv.begin() + cut(real * kv_row));
        REQUIRE(fa_tq_attention_batch(s, spec, 0, t, n, bq.data(), q_heads, bk.data(), bv.data(), 0.0f, out.data()) ==
                FA_TQ_OK);
        REQUIRE(fa_tq_cache_truncate(spec, t + real) == FA_TQ_OK);
        std::copy_n(out.begin(), real * q_row, got.begin() + cut(t * q_row));
        t += real;
    }
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); i += d) {
        const std::span<const float> g(&got[i], d), w(&want[i], d);
        worst = std::max(worst, std::sqrt(tq::test::squared_distance(g, w) / tq::test::dot(w, w)));
    }
    fa_tq_cache_free(plain);
    fa_tq_cache_free(spec);
    return {first_difference(got, want), worst};
}

}  // namespace

TEST_CASE("prefill: drafts checked as batches and truncated, levers off: the bits of one token at a time") {
    const int d = tq::test::main_head_dim();
    if (!tq::test::has_config(d, 4, 4)) return;
    fa_tq_state* s = fa_tq_init(d, tq::test::config(4, 4, FA_TQ_SCALE_FORMAT_F16, FA_TQ_CENTER_NONE, 0, FA_TQ_NO_SINKS,
                                                    FA_TQ_SMOOTH_NONE), 13);
    REQUIRE(s);
    for (int accept : {0, 2}) {  // drafts kept per batch (the rest rejected)
        CAPTURE(accept);
        const auto [at, worst] = drafts_vs_single(s, d, accept);
        CAPTURE(worst);
        CHECK(at < 0);
    }
    fa_tq_free(s);
}

// Known inexact (docs/llama.cpp.md, the speculative tests): the levers' blocks double
// ([1,2) [2,3) [3,5) [5,9) [9,17) [17,33) ... after a sink), and a block opened by a
// rejected draft keeps its mean and smoothing scales after fa_tq_cache_truncate, which
// also leaves the drafts in the running sums and query energies a later block opens
// from: the accepted rows part from position 17 on, on every ISA.  Not the batch's
// arithmetic: its rows are the single calls' bits (the test cases above).
TEST_CASE("prefill: drafts checked as batches and truncated, default levers: not yet the bits of one token at a time" *
          doctest::should_fail()) {
    const int d = tq::test::main_head_dim();
    if (!tq::test::has_config(d, 4, 4)) FAIL("no 4-bit keys and values at head dim " << d);
    fa_tq_config config = fa_tq_config_default();  // centered keys, a sink, smoothed keys
    config.value_bits = 4;
    fa_tq_state* s = fa_tq_init(d, config, 13);
    REQUIRE(s);
    for (int accept : {0, 2}) {
        CAPTURE(accept);
        const auto [at, worst] = drafts_vs_single(s, d, accept);
        CAPTURE(worst);
        MESSAGE("accept " << accept << ": first differing float " << at << " (token " << (at < 0 ? -1 : at / (9 * d))
                          << "), worst relative row difference " << worst);
        CHECK(at < 0);
    }
    fa_tq_free(s);
}
