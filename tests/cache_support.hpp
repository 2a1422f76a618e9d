// Helpers for the KV-cache tests: which configurations this build has, and
// filling a cache with random tokens.
#pragma once

#include "fp32_attention.hpp"
#include "test_support.hpp"
#include "turboquant/turboquant.hpp"

#include <algorithm>
#include <cmath>

namespace tq::test {

inline bool has_config(int d, float kb, float vb) {
    const tq_kernels* k = nullptr;
    return tq_find(d, kb, vb, &k) == TQ_OK;
}

// A C config; the fields not given are 0, the library's defaults.
inline fa_tq_config config(float key_bits, float value_bits, fa_tq_scale_format format = FA_TQ_SCALE_FORMAT_DEFAULT,
                           fa_tq_center center = FA_TQ_CENTER_DEFAULT, int center_block = 0, int sinks = 0,
                           fa_tq_smooth smooth = FA_TQ_SMOOTH_DEFAULT, fa_tq_scale scale = FA_TQ_SCALE_DEFAULT) {
    fa_tq_config c{};
    c.key_bits = key_bits;
    c.value_bits = value_bits;
    c.scale = scale;
    c.scale_format = format;
    c.center = center;
    c.center_block = center_block;
    c.sinks = sinks;
    c.smooth = smooth;
    return c;
}

// The compiled head dim closest to 128 (the spec's).
inline int main_head_dim() {
    int best = tq::variants().front().head_dim;
    for (const auto& v : tq::variants())
        if (std::abs(v.head_dim - 128) < std::abs(best - 128)) best = v.head_dim;
    return best;
}

// Writes positions [0, n) of every layer with Gaussian keys and values and
// returns them, [layer][pos][head][d].
inline std::vector<float> fill(KVCache& cache, int layers, int n, int d, Kind kind, std::uint64_t seed) {
    const std::size_t token = std::size_t(cache.num_heads()) * d;
    auto x = gaussian(std::size_t(layers) * n * token, seed);
    for (int l = 0; l < layers; ++l)
        for (int t = 0; t < n; ++t)
            cache.quantize(l, t, {&x[(std::size_t(l) * n + t) * token], token}, kind);
    return x;
}

}  // namespace tq::test
