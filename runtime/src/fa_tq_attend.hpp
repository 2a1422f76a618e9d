// The fused attention on the packed cache behind fa_tq_attention (one query token)
// and fa_tq_attention_batch (a chunk of them): the range check, what smoothing
// learns from queries, and the attention itself, run as tasks on the cache's
// executor (fa_tq_cache_set_threads).  reserve_* sizes this thread's buffers
// before the caller writes anything, so that running out of memory changes nothing.
#pragma once

#include "fa_tq_internal.hpp"
#include "fa_tq_token.hpp"

namespace tq::detail {

// What a call's fa_tq_attend_options add to plain attention, checked.
struct Shaping {
    float softcap = 0;              // > 0: s = softcap tanh(s / softcap)
    const float* slopes = nullptr;  // [n_q_heads] or null: s -= slope (query position - key position)
    const float* sinks = nullptr;   // [n_q_heads] or null: one more logit per softmax, with no value
    bool shapes_scores() const { return softcap > 0 || slopes != nullptr; }
};

// Refuses a query whose scores could overflow or turn NaN (TQ_ERROR_RANGE): key is
// this token's encoded key, k its input; q the n_q_heads query heads.
int check_score_range(const char* fn, const fa_tq_cache* cache, const fa_tq_layer& lay, const EncodedToken& key,
                      const float* k, const float* q, int n_q_heads, int d, float scale);

// Smoothing learns the channel energies of each KV head's queries (its group's).
void learn_queries(fa_tq_layer& lay, const float* q, int n_q_heads, int kv_heads, int d);

// Decode: the query token at pos attends over positions first_visible..pos, all
// written; out[n_q_heads * d].
int reserve_decode(const char* fn, const fa_tq_cache* cache, const fa_tq_layer& lay, int pos, int n_q_heads);
void attend_decode(const fa_tq_state* state, const fa_tq_cache* cache, const fa_tq_layer& lay, int pos,
                   const float* q, int n_q_heads, float scale, const Shaping& shaping, float* out);

// Prefill: query token i (q, out: [n_tokens][n_q_heads][d]) attends over positions
// 0..pos+i, all written and visible, with slot = position (a linear cache, or a ring
// that has not wrapped: first_visible(pos + n_tokens - 1) == 0).
int reserve_prefill(const char* fn, const fa_tq_cache* cache, const fa_tq_layer& lay, int pos, int n_tokens,
                    int n_q_heads);
void attend_prefill(const fa_tq_state* state, const fa_tq_cache* cache, const fa_tq_layer& lay, int pos,
                    int n_tokens, const float* q, int n_q_heads, float scale, const Shaping& shaping, float* out);

}  // namespace tq::detail
