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
