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
 * same layer, and fa_tq_cache_seq_len / clear / evict / free / set_threads /
 * set_parallel_for, need exclusive access to the cache.  One attention call can
 * itself use many threads: see fa_tq_cache_set_threads.
 *
 * Storage: per (layer, KV head) a contiguous stream of packed codes over
 * positions plus a stream of half-float scales, for keys and for values
 * (docs/packed-format.md), and the levers' per-block means and smoothing scales
 * and exact sinks (docs/levers.md).  K4/V2 at head_dim 128: 64 + 2 + 32 + 2 = 100
 * bytes per token per KV head, 104 with the default levers' records amortized
 * (docs/kv-cache.md#memory), 9.8x smaller than FP32.
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

/* How the cache stores each vector's scale (docs/packed-format.md, format 2):
 * IEEE half by default (2 bytes; scales beyond 65504 are refused with
 * TQ_ERROR_RANGE), or float (4 bytes, format 1, any finite scale). */
typedef enum fa_tq_scale_format {
    FA_TQ_SCALE_FORMAT_DEFAULT = 0,
    FA_TQ_SCALE_FORMAT_F16 = 1,
    FA_TQ_SCALE_FORMAT_F32 = 2
} fa_tq_scale_format;

/* Centering (docs/levers.md): per (layer, KV head), subtract a running mean
 * before quantizing and add it back in attention, exactly.  The mean of a block
 * of positions is the mean of every earlier position, frozen when the block
 * opens, and stored with the block (half floats, head_dim per block). */
typedef enum fa_tq_center {
    FA_TQ_CENTER_DEFAULT = 0,
    FA_TQ_CENTER_NONE = 1,
    FA_TQ_CENTER_KEYS = 2,
    FA_TQ_CENTER_VALUES = 3,
    FA_TQ_CENTER_BOTH = 4
} fa_tq_center;

/* Smoothing (docs/levers.md): per (layer, KV head) and block of positions, divide
 * each key channel by sigma_i = (E k_i^2 / E q_i^2)^(1/4) (learned online from
 * the keys written and the queries attended so far, stored with the block) and
 * multiply the query's channel by it: scores stay exact, and the quantization
 * noise moves to the channels the queries weigh least. */
typedef enum fa_tq_smooth {
    FA_TQ_SMOOTH_DEFAULT = 0,
    FA_TQ_SMOOTH_NONE = 1,
    FA_TQ_SMOOTH_KEYS = 2
} fa_tq_smooth;

/* How attention scores keys (docs/kernels.md, "The integer score path"): in
 * float (each centroid times the query), or in integers (the query rounded to
 * int8 per call, with 5-bit keys also its residual, centroids to an int8 table,
 * exact int32 sums: faster, within a derived bound of the float score).  Keys
 * above 5 bits round the query and the centroids to int16 instead (docs/kernels.md,
 * "The integer score above 32 levels"; slower than float on AVX2).  Batched
 * attention's tiles of 16 query rows or more score positions past the first 256
 * (every position, where the tile's first token is past them) in float over
 * decoded keys either way (docs/kernels.md, "The dense product"). */
typedef enum fa_tq_score {
    FA_TQ_SCORE_DEFAULT = 0,
    FA_TQ_SCORE_FLOAT = 1,
    FA_TQ_SCORE_INT8 = 2
} fa_tq_score;

/* How attention sums the values under the softmax weights (docs/kernels.md, "The
 * integer value sum"): in float (each centroid times the weight), or in integers
 * (per chunk of 64 positions each head's weights rounded to bytes with one scale,
 * centroids to an int8 table, exact int32 sums: faster with VNNI or sdot, within a
 * derived bound of the float sum).  INT8 needs value codebooks of at most 32 levels
 * (value bits <= 5); a config asking it of more bits is refused.  Batched attention's
 * tiles sum as they score (fa_tq_score): in float over decoded values past the first
 * 256 positions. */
typedef enum fa_tq_value_sum {
    FA_TQ_VALUE_SUM_DEFAULT = 0,
    FA_TQ_VALUE_SUM_FLOAT = 1,
    FA_TQ_VALUE_SUM_INT8 = 2
} fa_tq_value_sum;

/* Bit allocation, in bits per coordinate: whole, or in steps of 1/8 (3.5 puts
 * half the coordinates at 4 bits and half at 3), and the quality levers.  Bits
 * must be compiled into this build (TQ_BITS).  A zero field (as in
 * `fa_tq_config c = {4, 2};`) means the library's default for that field, bits
 * included: `(fa_tq_config){0}` is K4/V2 with every default, which
 * fa_tq_config_default() spells out. */
typedef struct {
    float key_bits;    /* default 4 */
    float value_bits;  /* default 2 */
    fa_tq_scale scale; /* default FA_TQ_SCALE_DEFAULT */
    fa_tq_scale_format scale_format; /* default: half */
    fa_tq_center center;             /* default: see docs/levers.md */
    int center_block;   /* positions per block (of means and smoothing scales), a power of two in [1, 65536]; 0: default */
    int sinks;          /* the first positions kept exact (float): 0 default, FA_TQ_NO_SINKS none, else 1..64 */
    fa_tq_smooth smooth;             /* default: see docs/levers.md */
    fa_tq_score score;               /* default: see docs/kernels.md */
    fa_tq_value_sum value_sum;       /* default: see docs/kernels.md */
} fa_tq_config;

#define FA_TQ_NO_SINKS (-1)

typedef struct fa_tq_state fa_tq_state;
typedef struct fa_tq_cache fa_tq_cache;

/* K4/V2 with every lever at the library's default (docs/levers.md). */
fa_tq_config fa_tq_config_default(void);

/* The quantizer for head_dim and config; seed fixes the rotation.  NULL if
 * head_dim or the bits are not in this build (the message lists what is). */
fa_tq_state* fa_tq_init(int head_dim, fa_tq_config config, uint64_t seed);
void fa_tq_free(fa_tq_state* state); /* NULL is a no-op */

/* A cache of num_layers × num_heads (KV heads) × max_seq_len positions, every
 * layer quantized by `state`.
 * Positions are written in order: pos may overwrite any written position or
 * append the next one (pos == length), never leave a gap. */
fa_tq_cache* fa_tq_cache_new(const fa_tq_state* state, int num_layers, int num_heads, int max_seq_len);
/* The same, as a ring buffer: pos is absolute (below INT_MAX), stored at slot
 * pos % max_seq_len; attention sees the last max_seq_len positions. */
fa_tq_cache* fa_tq_cache_new_ring(const fa_tq_state* state, int num_layers, int num_heads, int max_seq_len);
/* Per-layer configs: layer l is quantized by layer_states[l] (one head_dim for
 * all; bits, scale, seed and levers may differ), and every call on layer l
 * takes that state.  ring as in fa_tq_cache_new_ring. */
fa_tq_cache* fa_tq_cache_new_layers(const fa_tq_state* const* layer_states, int num_layers, int num_heads,
                                    int max_seq_len, bool ring);
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
 * domain; nothing of the history is decoded.
 * FA_TQ_OK means every out value is finite: a call whose scores could leave
 * the float range is refused (TQ_ERROR_RANGE, nothing written): a query head
 * whose norm, times the key smoothing scales, exceeds TQ_MAX_NORM(head_dim);
 * softmax_scale x |q| above 1e37; or softmax_scale x |q| x |k| above 1e37 for
 * a bound of every key stored in the layer since the last clear (a key that
 * left a ring's window still counts). */
int fa_tq_attention(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, const float* q,
                    int n_q_heads, const float* k, const float* v, float softmax_scale, float* out);

/* Prefill: fa_tq_attention for n_tokens tokens in one call.  Writes positions
 * pos .. pos+n_tokens-1 (k, v: [n_tokens][num_heads][head_dim]) and attends
 * query token i (q, out: [n_tokens][n_q_heads][head_dim]) causally over
 * positions 0 .. pos+i (a ring: the last max_seq_len).  The cache ends as
 * n_tokens fa_tq_attention calls would leave it, byte for byte, and out equals
 * theirs to float rounding.  Each key chunk is read once for a tile of queries
 * (all heads of its group), and the work splits over the cache's executor by KV
 * head and query tile.  A ring that wraps within the call attends token by
 * token (a later token overwrites positions an earlier query sees).  All or
 * nothing: if any token is refused (as fa_tq_attention would refuse it), the
 * cache and out are left as they were. */
int fa_tq_attention_batch(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, int n_tokens,
                          const float* q, int n_q_heads, const float* k, const float* v, float softmax_scale,
                          float* out);

/* What some models add to attention's scores (docs/kv-cache.md, "Shaped scores"),
 * in the order of llama.cpp's flash attention, for query head h at position pos
 * and a key at position p (positions as this cache counts them):
 *   s = softmax_scale <q, k>                      (softmax_scale 0: 1/sqrt(head_dim))
 *   s = softcap tanh(s / softcap)                 (softcap > 0: Gemma 2's capped logits)
 *   s = s - alibi_slopes[h] (pos - p)             (alibi_slopes not NULL: ALiBi)
 *   out = sum_p exp(s_p) v_p / (sum_p exp(s_p) + exp(sinks[h]))
 *                                                 (sinks not NULL: gpt-oss's learned sinks)
 * Arrays hold n_q_heads floats, all finite.  A zeroed struct (or NULL options)
 * is plain attention.  Scores stay exact in the fused path: each is shaped after
 * the score kernel, and a sink scales the output by sum / (sum + exp(sink)) at
 * the softmax's merge. */
typedef struct {
    float softmax_scale;
    float softcap;
    const float* alibi_slopes;
    const float* sinks;
} fa_tq_attend_options;

/* fa_tq_attention and fa_tq_attention_batch with shaped scores; the same checks,
 * and also: softcap finite and >= 0, the arrays finite, and |slope| x the
 * farthest distance within 1e37 (TQ_ERROR_RANGE). */
int fa_tq_attention_ex(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, const float* q,
                       int n_q_heads, const float* k, const float* v, const fa_tq_attend_options* options,
                       float* out);
int fa_tq_attention_batch_ex(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, int n_tokens,
                             const float* q, int n_q_heads, const float* k, const float* v,
                             const fa_tq_attend_options* options, float* out);

/* Threads inside one attention call.  With an executor set, fa_tq_attention
 * splits its work by KV head and along the sequence (flash-decoding: chunks of
 * about FA_TQ_PARALLEL_CHUNK or more positions, each keeping its max, its sum
 * and its partial output, merged by log-sum-exp), so a single KV head uses
 * every core.
 * The executor is one of:
 *   - none, the default (fa_tq_cache_set_threads(cache, 1)): one pass per KV
 *     head on the calling thread;
 *   - the cache's own pool of n_threads (the calling thread and n_threads - 1
 *     workers that the cache starts here and stops in fa_tq_cache_free); a call
 *     that finds the pool busy with another layer's call runs on its own thread;
 *   - the engine's pool, through fa_tq_cache_set_parallel_for.
 * The split depends on the positions (and where the levers' blocks begin)
 * only, never on the thread count or on which executor runs it: a pool of any
 * size and the engine's give the same bytes, which equal the one-pass output
 * (no executor) to float rounding.
 * Setting an executor needs exclusive access to the cache.  n_threads: 1 ..
 * FA_TQ_MAX_THREADS. */
#define FA_TQ_PARALLEL_CHUNK 256
#define FA_TQ_MAX_THREADS 1024
int fa_tq_cache_set_threads(fa_tq_cache* cache, int n_threads);
/* The engine's parallel-for: fn(ctx, n_tasks, task, task_arg) must call
 * task(task_arg, i) once for every i in [0, n_tasks), on any threads, in any
 * order, and return when all have returned.  Tasks neither fail nor block; fn
 * is called from the thread that calls fa_tq_attention, and from several at once
 * when layers attend concurrently.  While it waits, fn must not run other work
 * on the calling thread that calls this library (as a work-stealing pool's
 * waiting thread may): the tasks use that thread's scratch, and a batch call
 * that thread's record of what it overwrites (for a refused token).  fn NULL returns
 * the cache to one pass on the calling thread (and stops its own pool, if any). */
typedef void (*fa_tq_parallel_for)(void* ctx, int n_tasks, void (*task)(void* task_arg, int index), void* task_arg);
int fa_tq_cache_set_parallel_for(fa_tq_cache* cache, fa_tq_parallel_for fn, void* ctx);

/* Make dst hold what src holds: every position, the levers' statistics and
 * records, the sinks (an engine's copy of one sequence's cache into another's).
 * Both caches must have the same shape (layers, heads, max_seq_len, ring or not)
 * and each layer the same quantizer; dst's executor stays its own.  Needs
 * exclusive access to dst and no concurrent write to src. */
int fa_tq_cache_copy(fa_tq_cache* dst, const fa_tq_cache* src);

/* The cache's contents as bytes, for an engine's saved sessions: the positions
 * held (codes and scales), the levers' statistics, block records and sinks.  With
 * out NULL, *size receives the byte count; with a buffer of capacity >= that, the
 * bytes are written there.  The bytes are machine-local (native byte order, this
 * library's layout), as an engine's session files are. */
int fa_tq_cache_serialize(const fa_tq_cache* cache, void* out, size_t capacity, size_t* size);
/* Make the cache hold what fa_tq_cache_serialize wrote from a cache of the same
 * shape and quantizers (a linear cache: of any max_seq_len, if the positions fit).  All or nothing: a truncated, altered or foreign buffer is
 * refused (TQ_ERROR_INVALID_ARGUMENT) and the cache stays as it was.  Altered means
 * a shape, quantizer or count that does not match, or values beyond the bounds the
 * state records (scales, means, sinks, smoothing scales, running sums); other
 * altered bytes, a code among them, are a valid state and attend finitely. */
int fa_tq_cache_deserialize(fa_tq_cache* cache, const void* data, size_t size);

/* Drop the oldest n positions of every layer (memmove of the packed streams);
 * position p becomes p - n.  Linear caches only; n <= every layer's length. */
int fa_tq_cache_evict(fa_tq_cache* cache, int n);

/* Attention at pos sees positions pos - window + 1 .. pos (a sliding window), of
 * what the cache holds; 0 (the default): every position held.  A ring may keep
 * more positions than its window (window <= max_seq_len): the slack lets
 * fa_tq_cache_truncate remove recent positions exactly.  The window is the cache's
 * own, like its executor: fa_tq_cache_copy and _deserialize leave it as it is. */
int fa_tq_cache_set_window(fa_tq_cache* cache, int window);

/* Forget every layer's positions from `length` on (lengths above it become
 * length); the next write appends at length.  Linear caches: positions
 * 0..length-1 stay.  Rings: the slots of the removed positions had overwritten
 * older ones, which are gone too; fa_tq_cache_oldest says what is left, and
 * attention sees no further back (removing at most max_seq_len - window
 * positions keeps a full window).  As for an overwrite, the levers keep what
 * they learned: a position written again is encoded with its block's stored mean
 * and scales (the same tokens again give the same codes), and the running
 * statistics keep the removed vectors. */
int fa_tq_cache_truncate(fa_tq_cache* cache, int length);

/* The oldest position every layer still holds (0 for a linear cache; a ring's
 * last max_seq_len written, less what a truncate removed).  -1 on NULL. */
int fa_tq_cache_oldest(const fa_tq_cache* cache);

/* Linear caches: room for max_seq_len positions (at least every layer's length),
 * the written ones kept, for an engine whose sequences grow and shrink in a
 * shared pool.  Reallocates the streams (all or nothing): needs exclusive access. */
int fa_tq_cache_resize(fa_tq_cache* cache, int max_seq_len);

/* Bytes per token (all layers and KV heads, keys and values, codes and scales)
 * and the cache's total allocation (with the levers' block records, sinks and
 * running sums).  Either pointer may be NULL. */
int fa_tq_cache_bytes(const fa_tq_cache* cache, size_t* per_token, size_t* total);
/* Bytes per token all in: codes, scales, and the levers' per-block records
 * amortized over their block: head_dim half floats per center_block positions
 * for each centering mean (keys, values) and each set of key smoothing scales.
 * The figure to compare formats by.  Not in it: the sinks (sinks x head_dim
 * floats per layer, KV head and kind, fixed) and the running sums, both in
 * fa_tq_cache_bytes' total.  -1 on NULL. */
double fa_tq_cache_bytes_per_token_all_in(const fa_tq_cache* cache);

/* The message of the last failed call on this thread ("" if none); its status
 * code is tq_last_status() (registry.h). */
const char* fa_tq_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* TURBOQUANT_TURBOQUANT_H */
