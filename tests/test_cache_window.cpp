// Sliding windows, truncation and resizing (fa_tq_cache_set_window, _truncate,
// _oldest, _resize): what an engine's sequences need to remove recent positions and
// to grow and shrink in a shared pool.
#include "cache_snapshot.hpp"
#include "cache_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

using tq::KVCache;
using tq::Kind;

namespace {

constexpr int H = 2, kQHeads = 4;

// The levers off: a truncated and rewritten cache then holds byte for byte what a
// cache that never held the removed positions does (the running statistics that
// centering and smoothing learn keep the removed vectors, by design).
tq::Config plain(const tq_bit_kernels& v) {
    tq::Config c{tq::rate(v), tq::rate(v)};
    c.center = FA_TQ_CENTER_NONE;
    c.smooth = FA_TQ_SMOOTH_NONE;
    c.sinks = FA_TQ_NO_SINKS;
    return c;
}

// Token t's query, key and value, the same for every cache.
struct Tokens {
    int d;
    std::vector<float> q, k, v;
    Tokens(int head_dim, int n, std::uint64_t seed)
        : d(head_dim), q(tq::test::gaussian(std::size_t(n) * kQHeads * d, seed)),
          k(tq::test::gaussian(std::size_t(n) * H * d, seed + 1)), v(tq::test::gaussian(std::size_t(n) * H * d, seed + 2)) {}
    std::span<const float> qs(int t, int n = 1) const { return {&q[std::size_t(t) * kQHeads * d], std::size_t(n) * kQHeads * d}; }
    std::span<const float> ks(int t, int n = 1) const { return {&k[std::size_t(t) * H * d], std::size_t(n) * H * d}; }
    std::span<const float> vs(int t, int n = 1) const { return {&v[std::size_t(t) * H * d], std::size_t(n) * H * d}; }
};

// Decode steps first..last-1 in `cache`; the outputs, [token][query head][d].
std::vector<float> decode(KVCache& cache, const Tokens& x, int first, int last) {
    std::vector<float> out(std::size_t(last - first) * kQHeads * x.d);
    for (int t = first; t < last; ++t)
        cache.attention(0, t, x.qs(t), x.ks(t), x.vs(t), {&out[std::size_t(t - first) * kQHeads * x.d], std::size_t(kQHeads) * x.d});
    return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::abs(a[i] - b[i])));
    return m;
}

}  // namespace

TEST_CASE("cache window: attention over a window equals a ring of the window's size, with or without slack") {
    const int d = tq::test::main_head_dim(), W = 300, slack = 200, n = 900;
    for (const tq_bit_kernels& v : {tq::variants().front(), tq::variants().back()}) {
        CAPTURE(tq::rate(v));
        const tq::Quantizer quant(d, {tq::rate(v), tq::rate(v)}, 3);  // default levers
        const Tokens x(d, n, 21);
        KVCache exact(quant, 1, H, W, KVCache::Mode::ring);
        KVCache slacked(quant, 1, H, W + slack, KVCache::Mode::ring);
        KVCache linear(quant, 1, H, n);
        slacked.set_window(W);
        linear.set_window(W);
        slacked.set_threads(2);  // chunks of 256 slots: some lie wholly outside the window
        const auto want = decode(exact, x, 0, n);
        // Scores are summed in other chunks: equal to float rounding of the outputs (|out| ~ 1).
        CHECK(max_abs_diff(decode(slacked, x, 0, n), want) < 1e-4);
        CHECK(max_abs_diff(decode(linear, x, 0, n), want) < 1e-4);
        // Prefill in ubatches of 64 (token by token wherever a query's window starts past 0).
        KVCache batched(quant, 1, H, W + slack, KVCache::Mode::ring);
        batched.set_window(W);
        std::vector<float> got(want.size());
        for (int t = 0; t < n; t += 64) {
            const int m = std::min(64, n - t);
            batched.attention_batch(0, t, m, x.qs(t, m), x.ks(t, m), x.vs(t, m),
                                    {&got[std::size_t(t) * kQHeads * d], std::size_t(m) * kQHeads * d});
        }
        CHECK(max_abs_diff(got, want) < 1e-4);
    }
}

TEST_CASE("cache window: truncating within a ring's slack, then writing again, is exact") {
    const int d = tq::test::main_head_dim(), W = 16, slack = 8, n = 50;
    const auto& v = tq::variants().front();
    const tq::Quantizer quant(d, plain(v), 5);
    const Tokens x(d, n + 20, 8), y(d, n + 20, 9);  // y: the tokens written after the removal
    for (int removed : {1, slack}) {
        CAPTURE(removed);
        KVCache a(quant, 1, H, W + slack, KVCache::Mode::ring), b(quant, 1, H, W + slack, KVCache::Mode::ring);
        for (KVCache* c : {&a, &b}) c->set_window(W);
        decode(a, x, 0, n);
        decode(b, x, 0, n - removed);
        a.truncate(n - removed);
        CHECK(a.seq_len() == n - removed);
        CHECK(a.oldest() == n - W - slack);  // nothing beyond the slack was lost
        CHECK(decode(a, y, n - removed, n + 10) == decode(b, y, n - removed, n + 10));
        std::vector<float> got(std::size_t(W + slack) * H * d), want(got.size());
        for (Kind kind : {Kind::key, Kind::value}) {
            a.dequantize(0, n + 10 - W - slack, W + slack, kind, got);
            b.dequantize(0, n + 10 - W - slack, W + slack, kind, want);
            CHECK(got == want);
        }
    }
}

TEST_CASE("cache window: truncating past the slack leaves what was not overwritten, and attention sees no further back") {
    const int d = tq::test::main_head_dim(), cap = 16, W = 12, n = 40, keep = 30;
    const auto& v = tq::variants().front();
    const tq::Quantizer quant(d, plain(v), 5);
    const Tokens x(d, n + 4, 3);
    KVCache a(quant, 1, H, cap, KVCache::Mode::ring), b(quant, 1, H, cap, KVCache::Mode::ring);
    a.set_window(W);
    decode(a, x, 0, n);
    a.truncate(keep);
    CHECK(a.oldest() == n - cap);  // positions 24..29 are intact; 18..23 held 34..39's slots
    std::vector<float> one(std::size_t(H) * d);
    CHECK_THROWS_AS(a.dequantize(0, n - cap - 1, 1, Kind::key, one), tq::Error);
    a.dequantize(0, n - cap, 1, Kind::key, one);
    // b: the same positions, with a window that starts where a's truncation left it.
    b.set_window(keep - (n - cap) + 1);
    decode(b, x, 0, keep);
    CHECK(decode(a, x, keep, keep + 1) == decode(b, x, keep, keep + 1));
    // Saved and restored, the floor stays.
    KVCache c(quant, 1, H, cap, KVCache::Mode::ring);
    c.set_window(W);
    decode(a, x, keep + 1, keep + 2);
    c.deserialize(a.serialize());
    CHECK(c.oldest() == a.oldest());
    CHECK(decode(c, x, keep + 2, keep + 4) == decode(a, x, keep + 2, keep + 4));
    // Removing everything leaves an empty ring that appends at the new length.
    a.truncate(0);
    CHECK(a.oldest() == 0);
    CHECK(decode(a, x, 0, 2).size() == std::size_t(2) * kQHeads * d);
}

TEST_CASE("cache window: a linear cache truncates and resizes, keeping what it holds") {
    const int d = tq::test::main_head_dim(), n = 20;
    const float rate = tq::rate(tq::variants().front());
    for (const tq::Config& config : {plain(tq::variants().front()), tq::Config{rate, rate}}) {  // levers off, on
        const tq::Quantizer quant(d, config, 7);
        const Tokens x(d, 3 * n, 4);
        KVCache grown(quant, 1, H, 8), fixed(quant, 1, H, 3 * n);
        decode(grown, x, 0, 6);
        decode(fixed, x, 0, 6);
        grown.resize(3 * n);
        CHECK(grown.serialize() == fixed.serialize());
        CHECK(decode(grown, x, 6, n) == decode(fixed, x, 6, n));
        grown.resize(n);  // shrunk to what it holds
        CHECK(grown.bytes_total() < fixed.bytes_total());
        CHECK_THROWS_AS(grown.resize(n - 1), tq::Error);
        grown.resize(3 * n);
        CHECK(decode(grown, x, n, 2 * n) == decode(fixed, x, n, 2 * n));
        grown.truncate(n + 3);
        fixed.truncate(n + 3);
        CHECK(grown.seq_len() == n + 3);
        CHECK(decode(grown, x, n + 3, 2 * n) == decode(fixed, x, n + 3, 2 * n));
    }
}

TEST_CASE("cache window: bad calls are refused and change nothing") {
    const int d = tq::test::main_head_dim();
    const tq::Quantizer quant(d, plain(tq::variants().front()), 1);
    fa_tq_cache* ring = fa_tq_cache_new_ring(quant.get(), 1, H, 8);
    fa_tq_cache* linear = fa_tq_cache_new(quant.get(), 1, H, 8);
    REQUIRE((ring && linear));
    const auto x = tq::test::gaussian(std::size_t(H) * d, 2);
    for (int t = 0; t < 5; ++t)
        for (bool key : {true, false}) REQUIRE(fa_tq_quantize(quant.get(), linear, 0, t, x.data(), key) == FA_TQ_OK);
    auto refused = [](fa_tq_cache* c, const std::function<int()>& call) {
        const tq::test::Snapshot before(c);
        CHECK(call() == TQ_ERROR_INVALID_ARGUMENT);
        CHECK(std::string(fa_tq_last_error()).find("fa_tq_cache_") == 0);
        CHECK(tq::test::Snapshot(c) == before);
    };
    refused(ring, [&] { return fa_tq_cache_set_window(ring, -1); });
    refused(ring, [&] { return fa_tq_cache_set_window(ring, 9); });  // beyond the ring
    refused(linear, [&] { return fa_tq_cache_truncate(linear, -1); });
    refused(ring, [&] { return fa_tq_cache_resize(ring, 16); });
    refused(linear, [&] { return fa_tq_cache_resize(linear, 4); });  // below the 5 written
    refused(linear, [&] { return fa_tq_cache_resize(linear, 0); });
    CHECK(fa_tq_cache_set_window(nullptr, 1) == TQ_ERROR_INVALID_ARGUMENT);
    CHECK(fa_tq_cache_truncate(nullptr, 0) == TQ_ERROR_INVALID_ARGUMENT);
    CHECK(fa_tq_cache_resize(nullptr, 1) == TQ_ERROR_INVALID_ARGUMENT);
    CHECK(fa_tq_cache_oldest(nullptr) == -1);
    CHECK(fa_tq_cache_truncate(linear, 9) == FA_TQ_OK);  // beyond the length: nothing to remove
    CHECK(fa_tq_cache_seq_len(linear) == 5);
    fa_tq_cache_free(ring);
    fa_tq_cache_free(linear);
}
