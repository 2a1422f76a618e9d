// Synthetic keys, values and queries with the structure of real attention
// activations, for `tq demo` (no model needed).
//
// Per (layer, KV head), with z ~ N(0, I_d), w ~ N(0, I_8) fresh per token:
//   channel scales  sigma_i = exp(N(0, 0.5²))            (channels differ ~5x)
//   correlation     B: d x 8 Gaussian factor loadings      (channels co-vary)
//   key             k = mu + r * sigma_k ⊙ (0.6 z + B w)   mu: per-head bias ~ sigma ⊙ N(0, 1),
//                                                           except 4 outlier channels: mu = ±10 sigma
//                                                           (fixed sign) and sigma_k = 2 sigma
//   value           v = r * sigma ⊙ (0.6 z + B w)          (no bias, no outliers)
//   token norm      r = exp(N(0, 0.3²))                    per token
//   query           q = sigma ⊙ (0.6 z + B w) + 0.15 (k_j - mu) for a random cached token j,
//                   so each head attends to some tokens more than others.
#pragma once

#include <cstdint>
#include <vector>

namespace tq::cli {

struct SyntheticKV {
    int layers, heads, positions, head_dim;
    std::vector<float> keys, values;  // [layer][position][head][head_dim]
    std::vector<float> queries;       // [layer][query][head][head_dim]
    int queries_per_layer;

    const float* key(int layer, int pos) const { return &keys[index(layer, pos)]; }
    const float* value(int layer, int pos) const { return &values[index(layer, pos)]; }
    const float* query(int layer, int i) const {
        return &queries[(std::size_t(layer) * queries_per_layer + i) * heads * head_dim];
    }
    std::size_t index(int layer, int pos) const { return (std::size_t(layer) * positions + pos) * heads * head_dim; }
};

SyntheticKV make_synthetic_kv(int layers, int heads, int positions, int head_dim, int queries_per_layer,
                              std::uint64_t seed);

}  // namespace tq::cli
