// FP32 decode attention over an uncompressed cache: the baseline the compressed
// cache is measured against (fidelity in tests and `tq demo`, speed in benchmarks).
#pragma once

#include <cstddef>

namespace tq::reference {

// out[h] = sum_t softmax_t(scale * <q[h], keys[t][h / g]>) values[t][h / g] for
// query heads h < n_q_heads, g = n_q_heads / num_kv_heads; keys and values are
// [n][num_kv_heads][head_dim].  Dots use 8 independent partial sums, so the
// compiler vectorizes them without reassociating.  scores: n floats of scratch.
void fp32_attention(const float* q, int n_q_heads, const float* keys, const float* values, std::size_t n,
                    int num_kv_heads, int head_dim, float scale, float* scores, float* out);

// <a, b> over d floats with 8 independent partial sums (vectorizable as written).
float dot(const float* a, const float* b, int d);

// Cosine similarity of two float vectors (1 for two zero vectors, 0 if one is zero).
double cosine(const float* a, const float* b, std::size_t n);

}  // namespace tq::reference
