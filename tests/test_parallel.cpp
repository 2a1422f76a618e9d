// Attention split over threads (fa_tq_cache_set_threads, fa_tq_cache_set_parallel_for):
// flash-decoding chunks merged by log-sum-exp equal the one-pass output to float
// rounding, every executor gives the same bytes, and the executor's setters
// validate their arguments.
#include "cache_support.hpp"
#include "fa_tq_chunks.hpp"    // the cuts of the flash-decoding split
#include "fa_tq_internal.hpp"  // the executor, to check that a failed setter kept it

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <thread>

using tq::KVCache;
using tq::Kind;

namespace {

// Engines' parallel-fors: the tasks in reverse order on the calling thread, and one
// std::thread per task.
void reversed_for(void* calls, int n, void (*task)(void*, int), void* arg) {
    ++*static_cast<int*>(calls);
    for (int i = n; i-- > 0;) task(arg, i);
}

void spawning_for(void*, int n, void (*task)(void*, int), void* arg) {
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) threads.emplace_back(task, arg, i);
    for (auto& t : threads) t.join();
}

enum class Executor { one_pass, pool2, pool3, pool8, reversed, spawning };
constexpr Executor kExecutors[] = {Executor::one_pass, Executor::pool2,    Executor::pool3,
                                   Executor::pool8,    Executor::reversed, Executor::spawning};

struct Case {
    int q_heads, kv_heads, n, max_seq;
    KVCache::Mode mode;
};

// The outputs of attention at each position in `at` (every other position only
// quantized), on a cache run by `executor`.
std::vector<float> outputs(const tq::Quantizer& quant, const Case& c, Executor executor, const std::vector<int>& at,
                           int* reversed_calls) {
    const int d = quant.head_dim();
    KVCache cache(quant, 1, c.kv_heads, c.max_seq, c.mode);
    switch (executor) {
        case Executor::one_pass: break;
        case Executor::pool2: cache.set_threads(2); break;
        case Executor::pool3: cache.set_threads(3); break;
        case Executor::pool8: cache.set_threads(8); break;
        case Executor::reversed: cache.set_parallel_for(reversed_for, reversed_calls); break;
        case Executor::spawning: cache.set_parallel_for(spawning_for, nullptr); break;
    }
    const std::size_t token = std::size_t(c.kv_heads) * d, q_size = std::size_t(c.q_heads) * d;
    const auto keys = tq::test::gaussian(std::size_t(c.n) * token, 1);
    const auto values = tq::test::gaussian(std::size_t(c.n) * token, 2);
    const auto queries = tq::test::gaussian(std::size_t(c.n) * q_size, 3);
    std::vector<float> out(at.size() * q_size);
    std::size_t next = 0;
    for (int t = 0; t < c.n; ++t) {
        const std::span<const float> k(&keys[t * token], token), v(&values[t * token], token);
        if (next < at.size() && at[next] == t) {
            cache.attention(0, t, {&queries[t * q_size], q_size}, k, v, {&out[next * q_size], q_size});
            ++next;
        } else {
            cache.quantize(0, t, k, Kind::key);
            cache.quantize(0, t, v, Kind::value);
        }
    }
    return out;
}

// K4/V2 with no centering, smoothing or sinks: the whole cache one piece.
tq::Config without_levers() {
    tq::Config plain{4, 2};
    plain.center = FA_TQ_CENTER_NONE;
    plain.smooth = FA_TQ_SMOOTH_NONE;
    plain.sinks = FA_TQ_NO_SINKS;
    return plain;
}

// The worst |split - one pass| / |one pass| over the output vectors.
double worst_relative(const std::vector<float>& got, const std::vector<float>& want, int d) {
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); i += d) {
        const std::span<const float> g(&got[i], d), w(&want[i], d);
        worst = std::max(worst, std::sqrt(tq::test::squared_distance(g, w) / tq::test::dot(w, w)));
    }
    return worst;
}

}  // namespace

TEST_CASE("parallel: every split, thread count and executor equals one pass to float rounding, and each other's bytes") {
    const int d = tq::test::main_head_dim();
    if (!tq::test::has_config(d, 4, 2)) return;
    // With the default levers (centering and smoothing per block of 128, a sink)
    // and without any, so that chunks cut blocks and sinks in every way.
    const tq::Quantizer levers(d, {4, 2}, 9), none(d, without_levers(), 9);
    const Case cases[] = {
        {4, 4, 600, 1024, KVCache::Mode::linear},   // chunks of 256: 257, 256, 87 with the sink
        {8, 2, 700, 300, KVCache::Mode::ring},      // a ring that wraps inside a chunk
        {4, 1, 17000, 17000, KVCache::Mode::linear},  // 17000 slots: 64 chunks of about 266
    };
    for (const tq::Quantizer* quant : {&levers, &none}) {
        for (const Case& c : cases) {
            CAPTURE(c.q_heads);
            CAPTURE(c.kv_heads);
            CAPTURE(c.n);
            std::vector<int> at;  // positions that attend: every split around the chunk edges
            for (int t : {0, 1, 2, 254, 255, 256, 257, 299, 300, 511, 512, 513, c.n - 1})
                if (t < c.n) at.push_back(t);
            int reversed_calls = 0;
            const auto one_pass = outputs(*quant, c, Executor::one_pass, at, &reversed_calls);
            const auto split = outputs(*quant, c, Executor::pool2, at, &reversed_calls);
            // The same float sums in another order (the one pass adds up to 17000
            // weighted values in one float accumulator, a chunk 266), plus a merge in
            // double: measured up to 3.4e-6 of |out|, and each term is within a float
            // ulp of the value's magnitude, so 1e-5 allows the order alone.
            CHECK(worst_relative(split, one_pass, d) < 1e-5);
            for (Executor e : kExecutors) {
                if (e == Executor::one_pass || e == Executor::pool2) continue;
                CAPTURE(int(e));
                const auto other = outputs(*quant, c, e, at, &reversed_calls);
                CHECK(std::memcmp(other.data(), split.data(), split.size() * sizeof(float)) == 0);
            }
            CHECK(reversed_calls > 0);  // the engine's parallel-for was used
        }
    }
}

TEST_CASE("parallel: fused equals plain attention over the decoded cache, on four threads") {
    const int d = tq::test::main_head_dim();
    for (auto [kb, vb] : {std::pair{4.0f, 2.0f}, std::pair{4.0f, 4.0f}}) {
        if (!tq::test::has_config(d, kb, vb)) continue;
        const tq::Quantizer quant(d, {kb, vb}, 11);
        for (int kv : {1, 2}) {
            const int q_heads = 4, n = 3000;
            KVCache cache(quant, 1, kv, n);
            cache.set_threads(4);
            const std::size_t token = std::size_t(kv) * d;
            const auto keys = tq::test::gaussian(n * token, 1), values = tq::test::gaussian(n * token, 2);
            for (int t = 0; t + 1 < n; ++t) {
                cache.quantize(0, t, {&keys[t * token], token}, Kind::key);
                cache.quantize(0, t, {&values[t * token], token}, Kind::value);
            }
            const auto q = tq::test::gaussian(std::size_t(q_heads) * d, 3);
            std::vector<float> out(q.size()), want(q.size()), dk(n * token), dv(n * token), scratch(n);
            cache.attention(0, n - 1, q, {&keys[(n - 1) * token], token}, {&values[(n - 1) * token], token}, out);
            cache.dequantize(0, 0, n, Kind::key, dk);
            cache.dequantize(0, 0, n, Kind::value, dv);
            tq::reference::fp32_attention(q.data(), q_heads, dk.data(), dv.data(), n, kv, d, 1 / std::sqrt(float(d)),
                                          scratch.data(), want.data());
            CAPTURE(kb);
            CAPTURE(kv);
            CHECK(worst_relative(out, want, d) < 1e-5);
        }
    }
}

TEST_CASE("parallel: the executor's setters validate their arguments and change nothing on failure") {
    const int d = tq::variants().front().head_dim;
    const auto& v = tq::variants().front();
    const tq::Quantizer quant(d, {tq::rate(v), tq::rate(v)}, 1);
    fa_tq_cache* cache = fa_tq_cache_new(quant.get(), 1, 1, 8);
    REQUIRE(cache);
    CHECK(fa_tq_cache_set_threads(nullptr, 2) == TQ_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(fa_tq_last_error()).find("fa_tq_cache_set_threads: cache is NULL") == 0);
    CHECK(fa_tq_cache_set_parallel_for(nullptr, spawning_for, nullptr) == TQ_ERROR_INVALID_ARGUMENT);
    for (int bad : {0, -1, FA_TQ_MAX_THREADS + 1}) {
        CAPTURE(bad);
        CHECK(fa_tq_cache_set_threads(cache, bad) == TQ_ERROR_INVALID_ARGUMENT);
        CHECK(std::string(fa_tq_last_error()).find("n_threads must be in [1, 1024]") != std::string::npos);
    }
    CHECK(fa_tq_cache_set_threads(cache, 3) == FA_TQ_OK);
    CHECK(fa_tq_cache_set_threads(cache, 0) == TQ_ERROR_INVALID_ARGUMENT);  // the pool stays
    CHECK(cache->pool);
    CHECK(cache->pool->threads() == 3);
    CHECK(fa_tq_cache_set_parallel_for(cache, spawning_for, nullptr) == FA_TQ_OK);
    CHECK(!cache->pool);
    CHECK(fa_tq_cache_set_threads(cache, 1) == FA_TQ_OK);  // one pass again
    CHECK(!cache->parallel());
    fa_tq_cache_free(cache);
    KVCache wrapped(quant, 1, 1, 8);
    CHECK_THROWS_AS(wrapped.set_threads(0), tq::Error);
}

TEST_CASE("parallel: flash-decoding cuts move to the nearest block boundary within a quarter chunk") {
    const int d = tq::test::main_head_dim();
    if (!tq::test::has_config(d, 4, 2)) return;
    const tq::Quantizer levers(d, {4, 2}, 9), none(d, without_levers(), 9);  // levers: a sink, then blocks of 128
    struct Cut {
        const tq::Quantizer* quant;
        int kv_heads, capacity;
        bool ring;
        long first, last;  // the visible positions
    };
    const Cut cuts[] = {
        {&levers, 1, 17000, false, 0, 16999},  // 64 chunks of about 266: every cut on a block edge
        {&levers, 2, 700, true, 300, 999},     // a ring's two runs of slots
        {&none, 1, 17000, false, 0, 16999},    // one piece: the cuts stay at c L
    };
    for (const Cut& c : cuts) {
        CAPTURE(c.capacity);
        CAPTURE(c.ring);
        fa_tq_cache* cache = (c.ring ? fa_tq_cache_new_ring : fa_tq_cache_new)(c.quant->get(), 1, c.kv_heads, c.capacity);
        REQUIRE(cache);
        std::vector<tq::detail::Piece> pieces;
        tq::detail::cut_pieces(cache, cache->layers[0], c.first, c.last, pieces);
        const std::size_t n = std::size_t(c.last - c.first + 1);
        const std::size_t length = std::max<std::size_t>(FA_TQ_PARALLEL_CHUNK, (n + 63) / 64);
        const auto one = tq::detail::chunking(n, false, c.kv_heads, pieces);
        CHECK((one.count == 1 && one.bounds[0] == 0 && one.bounds[1] == n && one.longest == n));
        const auto chunks = tq::detail::chunking(n, true, c.kv_heads, pieces);
        REQUIRE(chunks.count == (n + length - 1) / length);
        CHECK(chunks.bounds[0] == 0);
        CHECK(chunks.bounds[chunks.count] == n);
        std::size_t longest = 0;
        for (std::size_t i = 1; i <= chunks.count; ++i) {
            CAPTURE(i);
            CHECK(chunks.bounds[i] > chunks.bounds[i - 1]);
            longest = std::max(longest, chunks.bounds[i] - chunks.bounds[i - 1]);
            if (i == chunks.count) break;
            const std::size_t target = i * length, cut = chunks.bounds[i];
            CHECK((cut > target ? cut - target : target - cut) <= length / 4);
            const bool on_edge = std::any_of(pieces.begin(), pieces.end(), [&](const tq::detail::Piece& p) {
                return p.slot_begin == cut || tq::detail::slot_end(p) == cut;
            });
            CHECK(on_edge == (c.quant == &levers));
            const std::size_t moved = cut > target ? cut - target : target - cut;
            for (const tq::detail::Piece& p : pieces)  // no edge inside (0, n) is nearer
                for (std::size_t edge : {p.slot_begin, tq::detail::slot_end(p)})
                    if (edge > 0 && edge < n) CHECK((edge > target ? edge - target : target - edge) >= moved);
            if (c.quant == &none) CHECK(cut == target);
        }
        CHECK(chunks.longest == longest);
        CHECK(longest <= length + length / 2);
        fa_tq_cache_free(cache);
    }
}
