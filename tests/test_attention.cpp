// Fused decode attention on the packed cache: equal to plain attention over the
// decoded cache, and close to FP32 attention.
#include "cache_support.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <set>

using tq::KVCache;
using tq::Kind;

namespace {

struct Heads {
    int q, kv;
};

// Runs fa_tq_attention at the last of n positions and the reference attention
// over the decoded cache; returns the worst |difference| / |reference output|.
double fused_vs_decoded(const tq::Quantizer& quant, Heads heads, int n, KVCache::Mode mode, int max_seq) {
    const int d = quant.head_dim();
    KVCache cache(quant, 1, heads.kv, max_seq, mode);
    const std::size_t token = std::size_t(heads.kv) * d;
    const auto keys = tq::test::gaussian(std::size_t(n) * token, 1), values = tq::test::gaussian(std::size_t(n) * token, 2);
    for (int t = 0; t + 1 < n; ++t) {
        cache.quantize(0, t, {&keys[t * token], token}, Kind::key);
        cache.quantize(0, t, {&values[t * token], token}, Kind::value);
    }
    const auto q = tq::test::gaussian(std::size_t(heads.q) * d, 3);
    std::vector<float> out(q.size());
    cache.attention(0, n - 1, q, {&keys[(n - 1) * token], token}, {&values[(n - 1) * token], token}, out);

    const int window = std::min(n, max_seq), first = n - window;
    std::vector<float> dk(window * token), dv(window * token), want(q.size()), scratch(window);
    cache.dequantize(0, first, window, Kind::key, dk);
    cache.dequantize(0, first, window, Kind::value, dv);
    tq::reference::fp32_attention(q.data(), heads.q, dk.data(), dv.data(), window, heads.kv, d,
                                  1 / std::sqrt(float(d)), scratch.data(), want.data());
    double worst = 0;
    for (int h = 0; h < heads.q; ++h) {
        const std::span<const float> o(&out[h * d], d), w(&want[h * d], d);
        worst = std::max(worst, std::sqrt(tq::test::squared_distance(o, w) / tq::test::dot(w, w)));
    }
    return worst;
}

}  // namespace

TEST_CASE("attention: fused equals plain attention over the decoded cache (MHA, GQA 2 and 4, MQA)") {
    const int d = tq::test::main_head_dim();
    const auto& first = tq::variants().front();
    for (auto [kb, vb] : {std::pair{4.0f, 2.0f}, std::pair{3.0f, 3.0f}, std::pair{tq::rate(first), tq::rate(first)}}) {
        if (!tq::test::has_config(d, kb, vb)) continue;
        const tq::Quantizer quant(d, {kb, vb}, 11);
        for (Heads heads : {Heads{4, 4}, Heads{8, 4}, Heads{8, 2}, Heads{4, 1}}) {
            for (int n : {1, 7, 64, 1000}) {
                CAPTURE(kb);
                CAPTURE(vb);
                CAPTURE(heads.q);
                CAPTURE(heads.kv);
                CAPTURE(n);
                CHECK(fused_vs_decoded(quant, heads, n, KVCache::Mode::linear, 1024) < 1e-5);
            }
        }
    }
}

TEST_CASE("attention: fused equals decoded for every compiled head dim and bit width") {
    for (const auto& v : tq::variants()) {
        CAPTURE(v.head_dim);
        CAPTURE(v.rate_eighths);
        const tq::Quantizer quant(v.head_dim, {tq::rate(v), tq::rate(v)}, 5);
        CHECK(fused_vs_decoded(quant, {4, 2}, 33, KVCache::Mode::linear, 64) < 1e-5);
    }
}

TEST_CASE("attention: ring mode attends over the last max_seq_len positions") {
    const int d = tq::test::main_head_dim();
    const auto& v = tq::variants().front();
    const tq::Quantizer quant(d, {tq::rate(v), tq::rate(v)}, 5);
    for (int n : {5, 16, 17, 50}) {
        CAPTURE(n);
        CHECK(fused_vs_decoded(quant, {4, 2}, n, KVCache::Mode::ring, 16) < 1e-5);
    }
}

namespace {

// Mean attention-output cosine vs FP32 attention, Gaussian keys, values and
// queries: 512 positions, 8 heads, 8 queries.
double gaussian_cosine(int d, float kb, float vb) {
    constexpr int kHeads = 8, kPositions = 512, kQueries = 8;
    const tq::Quantizer quant(d, {kb, vb}, 21);
    KVCache cache(quant, 1, kHeads, kPositions);
    const std::size_t token = std::size_t(kHeads) * d;
    const auto keys = tq::test::gaussian(kPositions * token, 31), values = tq::test::gaussian(kPositions * token, 32);
    for (int t = 0; t + 1 < kPositions; ++t) {
        cache.quantize(0, t, {&keys[t * token], token}, Kind::key);
        cache.quantize(0, t, {&values[t * token], token}, Kind::value);
    }
    double total = 0;
    for (int r = 0; r < kQueries; ++r) {
        const auto q = tq::test::gaussian(token, 40 + r);
        std::vector<float> out(token), want(token), scratch(kPositions);
        cache.attention(0, kPositions - 1, q, {&keys[(kPositions - 1) * token], token},
                        {&values[(kPositions - 1) * token], token}, out);
        tq::reference::fp32_attention(q.data(), kHeads, keys.data(), values.data(), kPositions, kHeads, d,
                                      1 / std::sqrt(float(d)), scratch.data(), want.data());
        for (int h = 0; h < kHeads; ++h) total += tq::reference::cosine(&out[h * d], &want[h * d], d);
    }
    return total / (kQueries * kHeads);
}

}  // namespace

TEST_CASE("attention: output cosine vs FP32 attention on Gaussian data") {
    // The spec measured ~0.94 / ~0.98 / ~0.99 for K4/V2, K4/V3, K4/V4.
    const struct {
        float kb, vb;
        double floor;
    } configs[] = {{4, 2, 0.93}, {4, 3, 0.975}, {4, 4, 0.99}};
    const int d = 128;
    for (const auto& c : configs) {
        if (!tq::test::has_config(d, c.kb, c.vb)) continue;
        CAPTURE(c.kb);
        CAPTURE(c.vb);
        const double mean = gaussian_cosine(d, c.kb, c.vb);
        MESSAGE("K" << c.kb << "/V" << c.vb << " attention-output cosine vs FP32 (Gaussian): " << mean);
        CHECK(mean >= c.floor);
    }
}

TEST_CASE("attention: a head dim that is not a power of two does as well as the nearest one that is") {
    // An exact Hadamard rotation leaves every coordinate distributed as at a
    // power of two, so fidelity may not drop (5e-3 allows for the sampling).
    std::set<int> dims;
    std::set<float> rates;
    for (const auto& v : tq::variants()) {
        dims.insert(v.head_dim);
        rates.insert(tq::rate(v));
    }
    for (int d : dims) {
        if (std::has_single_bit(unsigned(d))) continue;
        int nearest = 0;
        for (int p : dims)
            if (std::has_single_bit(unsigned(p)) && (!nearest || std::abs(p - d) < std::abs(nearest - d))) nearest = p;
        if (!nearest) continue;
        for (auto [kb, vb] : {std::pair{4.0f, 2.0f}, std::pair{4.0f, 4.0f}, std::pair{3.5f, 2.5f}}) {
            if (!rates.count(kb) || !rates.count(vb)) continue;
            CAPTURE(d);
            CAPTURE(nearest);
            CAPTURE(kb);
            CAPTURE(vb);
            const double at_d = gaussian_cosine(d, kb, vb), at_pow2 = gaussian_cosine(nearest, kb, vb);
            MESSAGE("K" << kb << "/V" << vb << ": cosine " << at_d << " at d=" << d << ", " << at_pow2 << " at d="
                        << nearest);
            CHECK(at_d >= at_pow2 - 0.005);
        }
    }
}
