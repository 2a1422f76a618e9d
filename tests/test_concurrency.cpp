// The header's thread-safety contract, with threads that really run at once
// (the ThreadSanitizer preset runs these): calls on one cache that touch
// different layers may run concurrently, and one state may serve many caches.
// Each threaded run must give the bytes a one-thread run gives.
#include "cache_support.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <latch>
#include <thread>

namespace {

constexpr int kHeads = 2, kQHeads = 4, kPositions = 48;

// One layer's (or one cache's) inputs: q, k, v per position.
struct Stream {
    std::vector<float> q, k, v;
    Stream(int d, std::uint64_t seed)
        : q(tq::test::gaussian(std::size_t(kPositions) * kQHeads * d, seed)),
          k(tq::test::gaussian(std::size_t(kPositions) * kHeads * d, seed + 1)),
          v(tq::test::gaussian(std::size_t(kPositions) * kHeads * d, seed + 2)) {}
};

// Attends every position of `s` on `layer` and returns the outputs, then the
// decoded keys and values of the layer.
std::vector<float> run(const fa_tq_state* state, fa_tq_cache* cache, int layer, const Stream& s, int d) {
    const std::size_t q_size = std::size_t(kQHeads) * d, kv_size = std::size_t(kHeads) * d;
    std::vector<float> out(kPositions * q_size + 2 * kPositions * kv_size);
    for (int t = 0; t < kPositions; ++t)
        if (fa_tq_attention(state, cache, layer, t, &s.q[t * q_size], kQHeads, &s.k[t * kv_size], &s.v[t * kv_size],
                            0.0f, &out[t * q_size]) != FA_TQ_OK)
            return {};
    float* decoded = &out[kPositions * q_size];
    if (!fa_tq_dequantize(state, cache, layer, 0, kPositions, true, decoded) ||
        !fa_tq_dequantize(state, cache, layer, 0, kPositions, false, decoded + kPositions * kv_size))
        return {};
    return out;
}

// Runs job(i) for i < n, on n threads released together.
template <class Job>
void run_together(int n, Job job) {
    std::latch start(n);
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i)
        threads.emplace_back([&, i] {
            start.arrive_and_wait();
            job(i);
        });
    for (auto& t : threads) t.join();
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
    return !a.empty() && a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("concurrency: one thread per layer on one cache gives the one-thread bytes") {
    const int d = tq::test::main_head_dim(), layers = 4;
    const auto& v = tq::variants().front();
    fa_tq_state* state = fa_tq_init(d, tq::test::config(tq::rate(v), tq::rate(v)), 7);
    REQUIRE(state);
    std::vector<Stream> streams;
    for (int l = 0; l < layers; ++l) streams.emplace_back(d, 100 + 10 * l);
    // pool 1: one pass per call; pool 3: the four layer threads share the cache's pool,
    // one call at a time gets its workers and the others run on their own thread
    // (fewer positions than a chunk: one pass per KV head either way, so the same bytes).
    for (int pool : {1, 3}) {
        CAPTURE(pool);
        fa_tq_cache* serial = fa_tq_cache_new(state, layers, kHeads, kPositions);
        fa_tq_cache* threaded = fa_tq_cache_new(state, layers, kHeads, kPositions);
        REQUIRE(serial);
        REQUIRE(threaded);
        REQUIRE(fa_tq_cache_set_threads(threaded, pool) == FA_TQ_OK);
        std::vector<std::vector<float>> want(layers), got(layers);
        for (int l = 0; l < layers; ++l) want[l] = run(state, serial, l, streams[l], d);
        run_together(layers, [&](int l) { got[l] = run(state, threaded, l, streams[l], d); });
        for (int l = 0; l < layers; ++l) {
            CAPTURE(l);
            CHECK(same_bytes(got[l], want[l]));
        }
        CHECK(fa_tq_cache_seq_len(threaded) == kPositions);
        fa_tq_cache_free(serial);
        fa_tq_cache_free(threaded);
    }
    fa_tq_free(state);
}

TEST_CASE("concurrency: caches sharing one state, one thread each, give the one-thread bytes") {
    const int d = tq::test::main_head_dim(), caches = 4;
    const auto& v = tq::variants().back();
    fa_tq_state* state = fa_tq_init(d, tq::test::config(tq::rate(v), tq::rate(v)), 11);
    REQUIRE(state);
    std::vector<Stream> streams;
    std::vector<std::vector<float>> want(caches), got(caches);
    for (int c = 0; c < caches; ++c) {
        streams.emplace_back(d, 200 + 10 * c);
        fa_tq_cache* cache = fa_tq_cache_new(state, 1, kHeads, kPositions);
        REQUIRE(cache);
        want[c] = run(state, cache, 0, streams[c], d);
        fa_tq_cache_free(cache);
    }
    std::vector<fa_tq_cache*> threaded(caches);
    for (auto& cache : threaded) {
        cache = fa_tq_cache_new(state, 1, kHeads, kPositions);
        REQUIRE(cache);
    }
    run_together(caches, [&](int c) { got[c] = run(state, threaded[c], 0, streams[c], d); });
    for (int c = 0; c < caches; ++c) {
        CAPTURE(c);
        CHECK(same_bytes(got[c], want[c]));
        fa_tq_cache_free(threaded[c]);
    }
    fa_tq_free(state);
}
