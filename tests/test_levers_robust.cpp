// The levers' running statistics against one bad token (docs/levers.md, robust
// statistics): an outlier key or value must not spoil the positions after it, and
// the stored means must stay where adding them back costs nothing.  Also the
// zero config's defaults.
#include "cache_support.hpp"
#include "fa_tq_internal.hpp"
#include "half_float.hpp"

#include <doctest/doctest.h>

#include <cstring>

using tq::KVCache;
using tq::Kind;

namespace {

constexpr int kHeadDim = 64, kKvHeads = 2, kQueryHeads = 4;
constexpr int kOutlierPos = 10, kPositions = 2048 + 64;
// Blocks of the default levers (1 sink, blocks of 128): position 10 falls in [9, 17).
constexpr int kNextBlock = 17, kWindow = 64;

// Per window of kWindow positions from kNextBlock on: the mean relative squared error
// of the decoded keys (or values) of a decode run over these tokens, a fresh random
// query each step.
std::vector<double> window_errors(const tq::Quantizer& quant, const std::vector<float>& keys,
                                  const std::vector<float>& values, Kind kind) {
    KVCache cache(quant, 1, kKvHeads, kPositions);
    const std::size_t token = std::size_t(kKvHeads) * kHeadDim;
    const auto queries = tq::test::gaussian(std::size_t(kPositions) * kQueryHeads * kHeadDim, 99);
    std::vector<float> out(std::size_t(kQueryHeads) * kHeadDim);
    for (int t = 0; t < kPositions; ++t)
        cache.attention(0, t, {&queries[std::size_t(t) * out.size()], out.size()}, {&keys[t * token], token},
                        {&values[t * token], token}, out);
    std::vector<float> decoded(kPositions * token);
    cache.dequantize(0, 0, kPositions, kind, decoded);
    const auto& x = kind == Kind::key ? keys : values;
    std::vector<double> errors;
    for (int w = kNextBlock; w + kWindow <= kPositions; w += kWindow) {
        double sum = 0;
        for (int t = w; t < w + kWindow; ++t)
            for (int h = 0; h < kKvHeads; ++h) {
                const std::span<const float> a(&decoded[t * token + h * kHeadDim], kHeadDim), b(&x[t * token + h * kHeadDim], kHeadDim);
                sum += tq::test::squared_distance(a, b) / tq::test::dot(b, b);
            }
        errors.push_back(sum / (kWindow * kKvHeads));
    }
    return errors;
}

// The decode run with and without one entry set to `outlier` at kOutlierPos: every
// window's error within 1.2x of the clean run's.
void check_outlier(const fa_tq_config& config, Kind kind, float outlier, float mean_size) {
    const tq::Quantizer quant(kHeadDim, tq::Config{config.key_bits, config.value_bits, config.scale, config.scale_format,
                                                   config.center, config.center_block, config.sinks, config.smooth},
                              3);
    const std::size_t token = std::size_t(kKvHeads) * kHeadDim;
    auto keys = tq::test::gaussian(kPositions * token, 1), values = tq::test::gaussian(kPositions * token, 2);
    const auto mean = tq::test::gaussian(token, 5);
    for (std::size_t i = 0; i < keys.size(); ++i) keys[i] += mean_size * mean[i % token];
    const auto clean = window_errors(quant, keys, values, kind);
    (kind == Kind::key ? keys : values)[kOutlierPos * token + 5] = outlier;
    const auto spoiled = window_errors(quant, keys, values, kind);
    double worst = 0;
    for (std::size_t w = 0; w < clean.size(); ++w) {
        CAPTURE(w);
        CHECK(spoiled[w] <= 1.2 * clean[w]);
        worst = std::max(worst, spoiled[w] / clean[w]);
    }
    MESSAGE("worst window's error with the outlier / without: " << worst);
}

}  // namespace

TEST_CASE("levers: one key entry of 3e4 does not spoil the keys after it (default config)") {
    if (!tq::test::has_config(kHeadDim, 4, 2)) return;  // a build without the default config at head dim 64
    for (float mean_size : {0.0f, 2.0f}) {
        CAPTURE(mean_size);
        check_outlier(fa_tq_config{}, Kind::key, 3e4f, mean_size);
    }
}

TEST_CASE("levers: one value entry of 1e6 does not spoil the values after it, nor push the means out of range") {
    if (!tq::test::has_config(kHeadDim, 4, 2)) return;
    const fa_tq_config config = tq::test::config(0, 0, FA_TQ_SCALE_FORMAT_F32, FA_TQ_CENTER_BOTH);
    check_outlier(config, Kind::value, 1e6f, 0.0f);
    // The stored value means stay at the data's scale (N(0, 1) entries): the outlier
    // entered the sums clipped at kOutlierLimit running RMS (about sqrt(2 + 1/n) once
    // n >= 16 vectors are in: the entry's deviation, the head's, the fading prior),
    // and the first mean after it averages 16 positions: it moves a mean by at most
    // 6 sqrt(3) / 16.
    float largest[2] = {0, 0};
    for (int spoiled : {0, 1}) {
        fa_tq_state* state = fa_tq_init(kHeadDim, config, 3);
        REQUIRE(state);
        fa_tq_cache* cache = fa_tq_cache_new(state, 1, kKvHeads, 512);
        REQUIRE(cache);
        const std::size_t token = std::size_t(kKvHeads) * kHeadDim;
        auto values = tq::test::gaussian(512 * token, 2);
        if (spoiled) values[kOutlierPos * token + 5] = 1e6f;
        for (int t = 0; t < 512; ++t) REQUIRE(fa_tq_quantize(state, cache, 0, t, &values[t * token], false) == FA_TQ_OK);
        for (std::uint16_t m : cache->layers[0].values.means)
            largest[spoiled] = std::max(largest[spoiled], std::abs(tq::detail::half_to_float(m)));
        fa_tq_cache_free(cache);
        fa_tq_free(state);
    }
    CHECK(largest[1] <= largest[0] + 6 * std::sqrt(3.0f) / 16);
}

TEST_CASE("levers: the zero config is K4/V2 with every default") {
    if (!tq::test::has_config(kHeadDim, 4, 2)) return;
    fa_tq_state* zero = fa_tq_init(kHeadDim, fa_tq_config{}, 7);
    fa_tq_state* spelled = fa_tq_init(kHeadDim, fa_tq_config_default(), 7);
    REQUIRE(zero);
    REQUIRE(spelled);
    CHECK(zero->key_eighths == 32);
    CHECK(zero->value_eighths == 16);
    CHECK(zero->scale_kind == spelled->scale_kind);
    CHECK(zero->levers == spelled->levers);
    CHECK(zero->kernels == spelled->kernels);
    // and the caches they write are the same bytes
    const std::size_t token = std::size_t(kKvHeads) * kHeadDim;
    const auto x = tq::test::gaussian(300 * token, 4);
    fa_tq_cache* a = fa_tq_cache_new(zero, 1, kKvHeads, 300);
    fa_tq_cache* b = fa_tq_cache_new(spelled, 1, kKvHeads, 300);
    for (int t = 0; t < 300; ++t) {
        REQUIRE(fa_tq_quantize(zero, a, 0, t, &x[t * token], true) == FA_TQ_OK);
        REQUIRE(fa_tq_quantize(spelled, b, 0, t, &x[t * token], true) == FA_TQ_OK);
    }
    CHECK(a->layers[0].keys.codes == b->layers[0].keys.codes);
    CHECK(a->layers[0].keys.scales16 == b->layers[0].keys.scales16);
    CHECK(a->layers[0].keys.means == b->layers[0].keys.means);
    fa_tq_cache_free(a);
    fa_tq_cache_free(b);
    fa_tq_free(zero);
    fa_tq_free(spelled);
}
