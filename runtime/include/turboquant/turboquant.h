/* TurboQuant KV cache: the spec's C API (fa_tq_*), on raw float buffers.
 *
 * Usage:
 *   fa_tq_state* tq = fa_tq_init(128, fa_tq_config_default(), 42);     (K4/V2)
 *   fa_tq_cache* cache = fa_tq_cache_new(tq, n_layers, n_kv_heads, max_seq_len);
 *   per token and layer:
 *     fa_tq_attention(tq, cache, layer, pos, q, n_q_heads, k, v, 0.0f, out);
 *
 * Errors: every function validates its arguments.  Functions returning int
 * return FA_TQ_OK (0) or a tq_status code; those returning a pointer return NULL.
 * Either way fa_tq_last_error() then holds a one-line message (per thread) and
 * the cache is unchanged: a failing write writes nothing.
 *
 * Thread safety: an fa_tq_state is immutable after fa_tq_init and may be shared
 * by any number of threads and caches.  Calls on one cache that touch different
 * layers (quantize, attention, dequantize) may run concurrently; calls on the
 * same layer, and fa_tq_cache_seq_len / clear / evict / free,
 * need exclusive access to the cache.
 *
 * Storage: per (layer, KV head) a contiguous stream of packed codes over
 * positions plus a stream of float scales, for keys and for values
 * (docs/packed-format.md).  K4/V2 at head_dim 128: 64 + 4 + 32 + 4 = 104 bytes
 * per token per KV head, 9.8x smaller than FP32.
 */
#ifndef TURBOQUANT_TURBOQUANT_H
#define TURBOQUANT_TURBOQUANT_H

#include "turboquant/kernel_types.h"
#include "turboquant/registry.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FA_TQ_OK 0

/* The per-vector scale; FA_TQ_SCALE_DEFAULT picks the library's default
 * (least squares, see docs/scale.md). */
typedef enum fa_tq_scale {
    FA_TQ_SCALE_DEFAULT = 0,
    FA_TQ_SCALE_NORM = 1,          /* s = ‖x‖ (the paper's) */
    FA_TQ_SCALE_LEAST_SQUARES = 2  /* s = ‖x‖ <u, ĉ> / ‖ĉ‖² */
} fa_tq_scale;

/* Bit allocation, in bits per coordinate: whole, or in steps of 1/8 (3.5 puts
 * half the coordinates at 4 bits and half at 3).  Bits must be compiled into
 * this build (TQ_BITS); a zero `scale` (as in `fa_tq_config c = {4, 2};`) means
 * FA_TQ_SCALE_DEFAULT. */
typedef struct {
    float key_bits;    /* default 4 */
    float value_bits;  /* default 2 */
    fa_tq_scale scale; /* default FA_TQ_SCALE_DEFAULT */
} fa_tq_config;

typedef struct fa_tq_state fa_tq_state;
typedef struct fa_tq_cache fa_tq_cache;

/* K4/V2 with the default scale. */
fa_tq_config fa_tq_config_default(void);

/* The quantizer for head_dim and config; seed fixes the rotation.  NULL if
 * head_dim or the bits are not in this build (the message lists what is). */
fa_tq_state* fa_tq_init(int head_dim, fa_tq_config config, uint64_t seed);
void fa_tq_free(fa_tq_state* state); /* NULL is a no-op */

/* A cache of num_layers × num_heads (KV heads) × max_seq_len positions.
 * Positions are written in order: pos may overwrite any written position or
 * append the next one (pos == length), never leave a gap. */
fa_tq_cache* fa_tq_cache_new(const fa_tq_state* state, int num_layers, int num_heads, int max_seq_len);
/* The same, as a ring buffer: pos is absolute (below INT_MAX), stored at slot
 * pos % max_seq_len; attention sees the last max_seq_len positions. */
fa_tq_cache* fa_tq_cache_new_ring(const fa_tq_state* state, int num_layers, int num_heads, int max_seq_len);
void fa_tq_cache_free(fa_tq_cache* cache); /* NULL is a no-op */
/* Forget every position (lengths back to 0); the memory stays allocated. */
int fa_tq_cache_clear(fa_tq_cache* cache);
/* Positions written in every layer for both keys and values (the smallest
 * layer length); in ring mode this is the absolute count, not capped.  -1 on NULL. */
int fa_tq_cache_seq_len(const fa_tq_cache* cache);

/* Quantize vec[num_heads * head_dim] (one token's keys or values for all KV
 * heads) into `layer` at `pos`.  Refuses NaN/Inf (TQ_ERROR_NONFINITE) and norms
 * above TQ_MAX_NORM(head_dim) (TQ_ERROR_RANGE). */
int fa_tq_quantize(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, const float* vec, bool is_key);

/* Decode positions start .. start+count-1 of `layer` into
 * out[count * num_heads * head_dim] (position-major, then head).  Returns out,
 * or NULL on error. */
float* fa_tq_dequantize(const fa_tq_state* state, const fa_tq_cache* cache, int layer, int start, int count,
                        bool is_key, float* out);

/* Decode-step attention: quantize this token's k and v [num_heads * head_dim]
 * into `layer` at `pos`, then attend q [n_q_heads * head_dim] (n_q_heads a
 * multiple of num_heads; query head h reads KV head h / (n_q_heads/num_heads))
 * over positions 0..pos (ring: the last max_seq_len), and write
 * out[n_q_heads * head_dim].  softmax_scale 0 means 1/sqrt(head_dim).  Fused:
 * scores and the weighted value sum run on the packed cache in the rotated
 * domain; nothing of the history is decoded. */
int fa_tq_attention(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, const float* q,
                    int n_q_heads, const float* k, const float* v, float softmax_scale, float* out);

/* Drop the oldest n positions of every layer (memmove of the packed streams);
 * position p becomes p - n.  Linear caches only; n <= every layer's length. */
int fa_tq_cache_evict(fa_tq_cache* cache, int n);

/* Bytes per token (all layers and KV heads, keys and values, codes and scales)
 * and the cache's total allocation.  Either pointer may be NULL. */
int fa_tq_cache_bytes(const fa_tq_cache* cache, size_t* per_token, size_t* total);

/* The message of the last failed call on this thread ("" if none); its status
 * code is tq_last_status() (registry.h). */
const char* fa_tq_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* TURBOQUANT_TURBOQUANT_H */
