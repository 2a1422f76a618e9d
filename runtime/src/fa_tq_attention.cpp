// fa_tq_attention: decode-step attention fused on the packed cache.
//
// Per query head, in the rotated domain (R orthonormal, so <q, k> = <Rq, Rk>):
//   q' = softmax_scale * R q
//   s_t = key_scale_t * <q', c[key levels_t]>          (score kernel)
//   p_t = exp(s_t - max s)                              (stable softmax)
//   a   = sum_t p_t * value_scale_t * c[value levels_t] (accumulate kernel)
//   out = R^T a / sum_t p_t                             (one inverse rotation)
#include "fa_tq_checks.hpp"
#include "fa_tq_token.hpp"
#include "last_error.hpp"

#include <algorithm>
#include <cmath>
#include <new>
#include <string>

using namespace tq::detail;

namespace {

// Refuses (before anything is written) a query whose scores could overflow:
// |score| <= softmax_scale |q| max_t |key scale_t| since |c_hat| <= 1.
int check_score_range(const char* fn, const fa_tq_cache* cache, int layer, std::size_t n,
                      const std::vector<float>& new_key_scales, const float* q, int n_q_heads, int d, float scale) {
    double key_max = 0;
    for (float s : new_key_scales) key_max = std::max(key_max, double(std::abs(s)));
    for (int h = 0; h < cache->num_heads; ++h) {
        const float* s = &cache->keys.scales[cache->stream_index(layer, h)];
        for (std::size_t t = 0; t < n; ++t) key_max = std::max(key_max, double(std::abs(s[t])));
    }
    double q_max = 0;
    for (int h = 0; h < n_q_heads; ++h) {
        double qq = 0;
        for (int i = 0; i < d; ++i) qq += double(q[std::size_t(h) * d + i]) * q[std::size_t(h) * d + i];
        q_max = std::max(q_max, std::sqrt(qq));
    }
    if (q_max > TQ_MAX_NORM(d))  // its rotation would overflow
        return fail(TQ_ERROR_RANGE, std::string(fn) + ": a query head's norm " + std::to_string(q_max) +
                                        " exceeds TQ_MAX_NORM(" + std::to_string(d) + ")");
    if (double(scale) * q_max * key_max > 1e37)
        return fail(TQ_ERROR_RANGE, std::string(fn) + ": |q| x |k| x softmax_scale reaches " +
                                        std::to_string(double(scale) * q_max * key_max) +
                                        ", beyond what float scores hold (1e37)");
    return FA_TQ_OK;
}

}  // namespace

extern "C" int fa_tq_attention(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, const float* q,
                               int n_q_heads, const float* k, const float* v, float softmax_scale, float* out) {
    constexpr const char* fn = "fa_tq_attention";
    if (int rc = check_pair(fn, state, cache)) return rc;
    if (int rc = check_layer(fn, cache, layer)) return rc;
    if (int rc = check_not_null(fn, q, "q")) return rc;
    if (int rc = check_not_null(fn, k, "k")) return rc;
    if (int rc = check_not_null(fn, v, "v")) return rc;
    if (int rc = check_not_null(fn, out, "out")) return rc;
    const int kv_heads = cache->num_heads, d = state->head_dim;
    if (n_q_heads <= 0 || n_q_heads % kv_heads != 0)
        return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": n_q_heads " + std::to_string(n_q_heads) +
                                                   " must be a positive multiple of the cache's " +
                                                   std::to_string(kv_heads) + " KV heads");
    if (!std::isfinite(softmax_scale) || softmax_scale < 0)
        return fail(TQ_ERROR_INVALID_ARGUMENT,
                    std::string(fn) + ": softmax_scale must be finite and >= 0 (0: 1/sqrt(head_dim))");
    if (int rc = check_write_pos(fn, cache, layer, pos, true)) return rc;
    if (int rc = check_write_pos(fn, cache, layer, pos, false)) return rc;
    const int newest = std::max(cache->keys.length[layer], cache->values.length[layer]) - 1;
    if (cache->ring && pos < newest)
        return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": a ring cache attends from its newest position (" +
                                                   std::to_string(newest) + "), not pos " + std::to_string(pos));
    if (int rc = check_finite(fn, q, std::size_t(n_q_heads) * d, "q")) return rc;

    thread_local std::vector<std::uint8_t> key_codes, value_codes;
    thread_local std::vector<float> key_scales, value_scales, q_rot, scores, acc;
    if (int rc = encode_token(fn, state, cache, k, true, key_codes, key_scales)) return rc;
    if (int rc = encode_token(fn, state, cache, v, false, value_codes, value_scales)) return rc;
    const std::size_t n = static_cast<std::size_t>(std::min(pos + 1, cache->max_seq_len));
    try {
        q_rot.resize(d);
        acc.resize(d);
        scores.resize(n);
    } catch (const std::bad_alloc&) {
        return fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory for " + std::to_string(n) + " scores");
    }

    const tq_kernels& kern = *state->kernels;
    const float scale = softmax_scale > 0 ? softmax_scale : static_cast<float>(1 / std::sqrt(double(d)));
    // Positions 0..pos; a ring holds the last max_seq_len of them, in slots [0, n) either way.
    if (int rc = check_score_range(fn, cache, layer, n, key_scales, q, n_q_heads, d, scale)) return rc;
    commit_token(cache, layer, pos, true, key_codes, key_scales);
    commit_token(cache, layer, pos, false, value_codes, value_scales);

    const int group = n_q_heads / kv_heads;
    for (int h = 0; h < n_q_heads; ++h) {
        const std::size_t base = cache->stream_index(layer, h / group);
        kern.rotate(state->signs.data(), q + std::size_t(h) * d, q_rot.data());
        for (float& x : q_rot) x *= scale;
        kern.key->score(q_rot.data(), &cache->keys.codes[base * cache->keys.code_bytes], &cache->keys.scales[base], n,
                        scores.data());
        const float m = *std::max_element(scores.begin(), scores.end());
        double sum = 0;
        for (float& s : scores) {
            s = std::exp(s - m);
            sum += s;
        }
        // Normalized weights (summing to 1) keep the accumulator within the values' magnitude.
        const float inv = static_cast<float>(1 / sum);
        for (float& s : scores) s *= inv;
        std::fill(acc.begin(), acc.end(), 0.0f);
        kern.value->accumulate(scores.data(), &cache->values.codes[base * cache->values.code_bytes],
                               &cache->values.scales[base], n, acc.data());
        kern.unrotate(state->signs.data(), acc.data(), out + std::size_t(h) * d);
    }
    return FA_TQ_OK;
}
