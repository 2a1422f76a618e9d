// The levers cost nothing where they cannot help (docs/levers.md, shrinkage): on
// isotropic, zero-mean Gaussian keys and values with a fresh random query each
// decode step there is no mean to subtract and no channel to smooth, so the
// default config's attention error must stay within 1% of the levers-off error.
//
// A statistical check, not a timed one: each (head dim, rate, length) runs both
// configs over the same data sets and rotation seeds, and compares the mean of the
// paired error ratios; the check also requires that mean's standard error to be
// well under the 1% it tests (at most 0.4%).
#include "cache_support.hpp"

#include <doctest/doctest.h>

#include <cstdio>

using tq::KVCache;

namespace {

constexpr int kKvHeads = 2, kQueryHeads = 4;
constexpr int kSamples = 128;  // decode steps per run where the error against exact attention is taken

// Attention-output error of a decode run against exact FP32 attention: the mean of
// |o - o*|^2 / |o*|^2 over kSamples evenly spaced steps and every query head (each
// step weighs the same; a ratio of sums would be ruled by the first steps, whose
// outputs average few values and are the largest).
double decode_error(const tq::Quantizer& quant, int n, std::uint64_t data_seed) {
    const int d = quant.head_dim();
    const std::size_t token = std::size_t(kKvHeads) * d, query = std::size_t(kQueryHeads) * d;
    const auto keys = tq::test::gaussian(n * token, data_seed), values = tq::test::gaussian(n * token, data_seed + 1);
    const auto queries = tq::test::gaussian(n * query, data_seed + 2);
    KVCache cache(quant, 1, kKvHeads, n);
    cache.set_threads(2);
    std::vector<float> out(query), exact(query), scores(n);
    double error = 0;
    for (int t = 0; t < n; ++t) {
        const std::span<const float> q(&queries[t * query], query);
        cache.attention(0, t, q, {&keys[t * token], token}, {&values[t * token], token}, out);
        if ((t + 1) % (n / kSamples) != 0) continue;
        tq::reference::fp32_attention(q.data(), kQueryHeads, keys.data(), values.data(), std::size_t(t) + 1, kKvHeads, d,
                                      1 / std::sqrt(float(d)), scores.data(), exact.data());
        for (int h = 0; h < kQueryHeads; ++h) {
            const std::span<const float> o(&out[h * d], d), e(&exact[h * d], d);
            error += tq::test::squared_distance(o, e) / tq::test::dot(e, e) / (kSamples * kQueryHeads);
        }
    }
    return error;
}

}  // namespace

TEST_CASE("statistics: on isotropic data the default levers' attention error is within 1% of the levers off") {
    struct Rate {
        float key, value;
    };
    struct Length {
        int n, seeds;  // fewer seeds at the long length: each error there averages 8x the steps
    };
    int checked = 0;
    for (int d : {64, 128, 256})
        for (Rate r : {Rate{3, 2}, Rate{4, 4}}) {
            if (!tq::test::has_config(d, r.key, r.value)) continue;
            for (Length len : {Length{512, 24}, Length{4096, 4}}) {
                std::vector<double> ratios;
                for (int s = 0; s < len.seeds; ++s) {
                    const std::uint64_t seed = 1000 + 17 * std::uint64_t(s);
                    const tq::Quantizer on(d, tq::Config{r.key, r.value}, seed);
                    const tq::Quantizer off(d, tq::Config{r.key, r.value, FA_TQ_SCALE_DEFAULT, FA_TQ_SCALE_FORMAT_DEFAULT,
                                                          FA_TQ_CENTER_NONE, 0, FA_TQ_NO_SINKS, FA_TQ_SMOOTH_NONE},
                                            seed);
                    ratios.push_back(decode_error(on, len.n, seed) / decode_error(off, len.n, seed));
                }
                double mean = 0, var = 0;
                for (double x : ratios) mean += x / double(ratios.size());
                for (double x : ratios) var += (x - mean) * (x - mean) / double(ratios.size() - 1);
                const double stderr_of_mean = std::sqrt(var / double(ratios.size()));
                std::printf("d %3d K%g/V%g, %4d positions, %2d seeds: default / off = %.4f +- %.4f\n", d, double(r.key),
                            double(r.value), len.n, len.seeds, mean, stderr_of_mean);
                std::fflush(stdout);
                CAPTURE(d);
                CAPTURE(r.key);
                CAPTURE(r.value);
                CAPTURE(len.n);
                CHECK(mean <= 1.01);
                CHECK(stderr_of_mean <= 0.004);
                ++checked;
            }
        }
    CHECK(checked > 0);  // a build without any of these configs checks nothing: fail
}
