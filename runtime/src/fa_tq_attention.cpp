// fa_tq_attention and fa_tq_attention_batch: their checks and the writing of each
// token, over the fused attention of fa_tq_attend.hpp (where the maths is).
#include "fa_tq_attend.hpp"
#include "fa_tq_checks.hpp"
#include "fa_tq_token.hpp"
#include "fa_tq_undo.hpp"
#include "last_error.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <new>
#include <string>

using namespace tq::detail;

namespace {

int check_shaping(const char* fn, const fa_tq_attend_options& opt, int n_q_heads, long last);

// What both entry points check before anything is written: the state, the cache and
// the layer, the buffers, the heads, softmax_scale, and positions pos..pos+n_tokens-1
// as writes in order (a ring: from its newest position on).
int check_call(const char* fn, const fa_tq_state* state, const fa_tq_cache* cache, int layer, int pos, int n_tokens,
               const float* q, int n_q_heads, const float* k, const float* v, const fa_tq_attend_options& opt,
               const float* out) {
    const float softmax_scale = opt.softmax_scale;
    if (int rc = check_layer_state(fn, state, cache, layer)) return rc;
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
    if (n_tokens < 1)
        return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": n_tokens must be >= 1, got " + std::to_string(n_tokens));
    if (int rc = check_write_pos(fn, cache, layer, pos, true)) return rc;
    if (int rc = check_write_pos(fn, cache, layer, pos, false)) return rc;
    const long last = long(pos) + n_tokens - 1;
    if (last >= (cache->ring ? long(INT_MAX) : long(cache->max_seq_len)))
        return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": positions " + std::to_string(pos) + ".." +
                                                   std::to_string(last) + " run past " +
                                                   (cache->ring ? std::string("INT_MAX")
                                                                : "max_seq_len " + std::to_string(cache->max_seq_len)));
    const fa_tq_layer& lay = cache->layers[std::size_t(layer)];
    const int newest = std::max(lay.keys.length, lay.values.length) - 1;
    if (cache->ring && pos < newest)
        return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": a ring cache attends from its newest position (" +
                                                   std::to_string(newest) + "), not pos " + std::to_string(pos));
    const std::size_t q_floats = std::size_t(n_tokens) * std::size_t(n_q_heads) * std::size_t(d);
    if (q_floats / std::size_t(n_tokens) / std::size_t(d) != std::size_t(n_q_heads))
        return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + std::to_string(n_tokens) + " tokens x " +
                                                   std::to_string(n_q_heads) + " query heads is too many for one call");
    if (int rc = check_finite(fn, q, q_floats, "q")) return rc;
    return check_shaping(fn, opt, n_q_heads, last);
}

// The options' own checks: a finite softcap >= 0, finite arrays, and ALiBi's biases
// within float's reach at the farthest distance (the last position).
int check_shaping(const char* fn, const fa_tq_attend_options& opt, int n_q_heads, long last) {
    if (!std::isfinite(opt.softcap) || opt.softcap < 0)
        return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": softcap must be finite and >= 0 (0: none)");
    if (opt.sinks)
        if (int rc = check_finite(fn, opt.sinks, std::size_t(n_q_heads), "sinks")) return rc;
    if (opt.alibi_slopes) {
        if (int rc = check_finite(fn, opt.alibi_slopes, std::size_t(n_q_heads), "alibi_slopes")) return rc;
        for (int h = 0; h < n_q_heads; ++h)
            if (double(std::abs(opt.alibi_slopes[h])) * double(last) > 1e37)
                return fail(TQ_ERROR_RANGE, std::string(fn) + ": alibi_slopes[" + std::to_string(h) + "] x " +
                                                std::to_string(last) + " positions is beyond what float scores hold");
    }
    return FA_TQ_OK;
}

// Writes one token's key and value at pos (after checking that its query's scores
// stay in range) and lets smoothing learn its query; nothing is written on failure.
int write_token(const char* fn, const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, const float* q,
                int n_q_heads, const float* k, const float* v, float scale) {
    thread_local EncodedToken key_token, value_token;
    if (int rc = encode_token(fn, state, cache, layer, pos, k, true, key_token)) return rc;
    if (int rc = encode_token(fn, state, cache, layer, pos, v, false, value_token)) return rc;
    fa_tq_layer& lay = cache->layers[std::size_t(layer)];
    if (int rc = check_score_range(fn, cache, lay, key_token, k, q, n_q_heads, state->head_dim, scale)) return rc;
    commit_token(cache, layer, pos, true, key_token, k);
    commit_token(cache, layer, pos, false, value_token, v);
    learn_queries(lay, q, n_q_heads, cache->num_heads, state->head_dim);
    return FA_TQ_OK;
}

float resolved_scale(float softmax_scale, int d) {
    return softmax_scale > 0 ? softmax_scale : static_cast<float>(1 / std::sqrt(double(d)));
}

Shaping shaping_of(const fa_tq_attend_options& opt) { return {opt.softcap, opt.alibi_slopes, opt.sinks}; }

int attention(const char* fn, const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, const float* q,
              int n_q_heads, const float* k, const float* v, const fa_tq_attend_options& opt, float* out) {
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_call(fn, state, cache, layer, pos, 1, q, n_q_heads, k, v, opt, out)) return rc;
        const fa_tq_layer& lay = cache->layers[std::size_t(layer)];
        const float scale = resolved_scale(opt.softmax_scale, state->head_dim);
        if (int rc = reserve_decode(fn, cache, lay, pos, n_q_heads)) return rc;
        if (int rc = write_token(fn, state, cache, layer, pos, q, n_q_heads, k, v, scale)) return rc;
        attend_decode(state, cache, lay, pos, q, n_q_heads, scale, shaping_of(opt), out);
        return FA_TQ_OK;
    });
}

int attention_batch(const char* fn, const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, int n_tokens,
                    const float* q, int n_q_heads, const float* k, const float* v, const fa_tq_attend_options& opt,
                    float* out) {
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_call(fn, state, cache, layer, pos, n_tokens, q, n_q_heads, k, v, opt, out)) return rc;
        const fa_tq_layer& lay = cache->layers[std::size_t(layer)];
        const int d = state->head_dim;
        const float scale = resolved_scale(opt.softmax_scale, d);
        const Shaping shaping = shaping_of(opt);
        const std::size_t q_row = std::size_t(n_q_heads) * d, kv_row = std::size_t(cache->num_heads) * d;
        // Where a query does not see from position 0 (a window, a ring that wraps within
        // the call and overwrites positions its earlier queries see, what a truncate
        // left): token by token, into scratch until every write succeeded.
        const bool wraps = cache->first_visible(lay, pos + n_tokens - 1) > 0;
        thread_local std::vector<float> wrapped_out;
        thread_local LayerUndo undo;
        try {
            if (wraps) wrapped_out.resize(std::size_t(n_tokens) * q_row);
            undo.capture(cache, layer, pos, n_tokens);
        } catch (const std::bad_alloc&) {
            return fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory for " + std::to_string(n_tokens) +
                                                    " tokens");
        }
        if (!wraps)
            if (int rc = reserve_prefill(fn, cache, lay, pos, n_tokens, n_q_heads)) return rc;
        for (int i = 0; i < n_tokens; ++i) {
            const float* qi = q + std::size_t(i) * q_row;
            int rc = wraps ? reserve_decode(fn, cache, lay, pos + i, n_q_heads) : FA_TQ_OK;
            if (!rc) rc = write_token(fn, state, cache, layer, pos + i, qi, n_q_heads, k + std::size_t(i) * kv_row,
                                      v + std::size_t(i) * kv_row, scale);
            if (rc) {
                undo.restore(cache);
                return rc;
            }
            if (wraps) attend_decode(state, cache, lay, pos + i, qi, n_q_heads, scale, shaping, &wrapped_out[i * q_row]);
        }
        if (wraps)
            std::memcpy(out, wrapped_out.data(), wrapped_out.size() * sizeof(float));
        else
            attend_prefill(state, cache, lay, pos, n_tokens, q, n_q_heads, scale, shaping, out);
        return FA_TQ_OK;
    });
}

}  // namespace

extern "C" int fa_tq_attention(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, const float* q,
                               int n_q_heads, const float* k, const float* v, float softmax_scale, float* out) {
    return attention("fa_tq_attention", state, cache, layer, pos, q, n_q_heads, k, v,
                     fa_tq_attend_options{softmax_scale, 0, nullptr, nullptr}, out);
}

extern "C" int fa_tq_attention_ex(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, const float* q,
                                  int n_q_heads, const float* k, const float* v, const fa_tq_attend_options* options,
                                  float* out) {
    return attention("fa_tq_attention_ex", state, cache, layer, pos, q, n_q_heads, k, v,
                     options ? *options : fa_tq_attend_options{}, out);
}

extern "C" int fa_tq_attention_batch(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, int n_tokens,
                                     const float* q, int n_q_heads, const float* k, const float* v,
                                     float softmax_scale, float* out) {
    return attention_batch("fa_tq_attention_batch", state, cache, layer, pos, n_tokens, q, n_q_heads, k, v,
                           fa_tq_attend_options{softmax_scale, 0, nullptr, nullptr}, out);
}

extern "C" int fa_tq_attention_batch_ex(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos,
                                        int n_tokens, const float* q, int n_q_heads, const float* k, const float* v,
                                        const fa_tq_attend_options* options, float* out) {
    return attention_batch("fa_tq_attention_batch_ex", state, cache, layer, pos, n_tokens, q, n_q_heads, k, v,
                           options ? *options : fa_tq_attend_options{}, out);
}
