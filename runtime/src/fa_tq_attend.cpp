// The fused attention on the packed cache: one query token (decode) or a chunk of
// them (prefill), split into tasks for the cache's executor.
//
// Per query head, in the rotated domain (R orthonormal, so <q, k> = <Rq, Rk>):
//   q' = softmax_scale * R q
//   s_t = key_scale_t * <q'_b, c[key levels_t]> + softmax_scale * <q, mu_b> (score kernel + mean)
//   p_t = exp(s_t - max s) / sum                                              (stable softmax)
//   a   = sum_t p_t * value_scale_t * c[value levels_t]                       (accumulate kernel)
//   out = R^T a + sum_b (sum_{t in b} p_t) nu_b                               (one inverse rotation)
// mu_b / nu_b are the key / value means of position t's block b (zero when not
// centered); the weights sum to 1, so adding nu_b back per block is exact.  With
// smoothing, block b's keys were divided by channel scales sigma_b, so the query
// is multiplied by them: q'_b = softmax_scale * R (q * sigma_b), exact for scores.
// Sink positions use their exact vectors instead (docs/levers.md).  A prefill tile of
// kDenseRows rows or more works in the original domain past its first span: its keys and
// values decoded (R^T of the above) once per block of slots and mapped back (keys
// sigma_b k' + mu_b, values v' + nu_b), scores = softmax_scale q K^T and a += P V as
// dense products (docs/kernels.md, "The dense product").
#include "fa_tq_attend.hpp"

#include "attend_ops.hpp"
#include "fa_tq_blocks.hpp"
#include "fa_tq_chunks.hpp"
#include "half_float.hpp"
#include "last_error.hpp"
#include "norms.hpp"
#include "softmax.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <string>

namespace tq::detail {
namespace {

// A magnitude in a message: "1.2e+39".
std::string magnitude(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", x);
    return text;
}

// What one query head's attention over one chunk leaves for the merge: its max
// score and the sum of exp(score - max); its output, normalized by that sum, is
// written in two parts: acc (rotated domain, from the packed values) and extra
// (original domain: the means and sinks).
struct Partial {
    float max;
    double sum;
};

// The attention of one KV head's query heads over chunks of its visible slots.
struct ChunkAttention {
    const fa_tq_state* state;
    const fa_tq_cache* cache;
    const fa_tq_layer& lay;
    const std::vector<Piece>& pieces;
    const float* q;      // [n_q_heads][d], as given
    const float* q_rot;  // [n_q_heads][d], scale * R q
    float scale;
    int group;  // query heads per KV head

    std::size_t wrap;  // pieces [0, wrap) and [wrap, size) each run in increasing slots (a ring's wrap)
    Softmax softmax;   // softmax_for(the kernels' ISA), resolved once per call
    AttendOps ops;     // attend_ops_for(the kernels' ISA)
    bool masked = false;  // some slots of [0, n) are not visible (a window): they score -FLT_MAX, weight 0
    Shaping shaping{};    // the call's options (softcap, ALiBi, sinks)
    long query_pos = 0;   // a decode call's query position (a prefill row's is pos + its token)

    PieceRanges candidates(std::size_t c0, std::size_t c1) const { return pieces_meeting(pieces, wrap, c0, c1); }

    // Query head h's scores (at query position qpos) of piece pc's slots [s0, s1),
    // row[0] for slot s0: capped, then ALiBi's bias for each key's distance.
    void shape(float* row, int h, long qpos, const Piece& pc, std::size_t s0, std::size_t s1) const {
        const float cap = shaping.softcap, slope = shaping.slopes ? shaping.slopes[h] : 0.0f;
        const long p0 = pc.pos_begin + long(s0 - pc.slot_begin);
        for (std::size_t t = 0; t < s1 - s0; ++t) {
            float x = row[t];
            if (cap > 0) x = cap * std::tanh(x / cap);
            if (slope != 0) x -= slope * float(qpos - (p0 + long(t)));
            row[t] = x;
        }
    }

    // What query head h's output keeps with a learned sink: sum / (sum + exp(sink - max))
    // for its softmax's max and sum (1 without sinks).
    double sink_share(int h, float max, double sum) const {
        return shaping.sinks ? sum / (sum + std::exp(double(shaping.sinks[h]) - double(max))) : 1.0;
    }

    // The exact vector of slot `slot` of a sink piece.
    const float* sink(const fa_tq_stream& s, int kv_head, const Piece& pc, std::size_t slot) const {
        const std::size_t a = std::size_t(pc.pos_begin + cache->evicted) + (slot - pc.slot_begin);
        return &s.sink_vectors[(std::size_t(kv_head) * lay.levers.sinks + a) * std::size_t(state->head_dim)];
    }

    // Where one query head's results of a group go: acc (floats) and extra (doubles)
    // d apart per head times `stride`, partials `partial_stride` apart.
    struct Outputs {
        float* acc;
        double* extra;
        std::size_t stride;
        Partial* partials;
        std::size_t partial_stride;
    };

    // KV head g's query heads over slots [c0, c1): the keys' scores for all of them
    // in one pass of the score kernel (each key unpacked once per group), then per
    // head its softmax and weighted values.  scores: group x (c1 - c0) floats and
    // q_smooth: (group + 2) x d floats of scratch (the smoothed queries, then the
    // block's smoothing scales and mean widened to floats).
    void run(int kv_head, const float* key_scales, const float* value_scales, std::size_t c0, std::size_t c1,
             float* scores, float* q_smooth, const Outputs& o) const {
        const tq_kernels& kern = *state->kernels;
        const int d = state->head_dim, h0 = kv_head * group;
        const fa_tq_stream& ks = lay.keys;
        const fa_tq_stream& vs = lay.values;
        const std::size_t base = cache->stream_index(kv_head), hd = std::size_t(kv_head) * d;
        const std::size_t len = c1 - c0;
        // Each piece's slots that fall in [c0, c1): [s0, s1).
        auto span = [&](const Piece& pc, std::size_t& s0, std::size_t& s1) {
            s0 = std::max(pc.slot_begin, c0);
            s1 = std::min(slot_end(pc), c1);
            return s0 < s1;
        };
        std::size_t s0, s1;
        const auto runs = candidates(c0, c1);
        // Slots no piece covers keep -FLT_MAX: exp gives them 0, and a chunk of none
        // merges with weight exp(-FLT_MAX - max) = 0.
        if (masked) std::fill(scores, scores + std::size_t(group) * len, -std::numeric_limits<float>::max());
        for (auto [b, e] : runs)
          for (std::size_t ip = b; ip < e; ++ip) {
            const Piece& pc = pieces[ip];
            if (!span(pc, s0, s1)) continue;
            float* sc = scores + (s0 - c0);  // row j at sc + j * len
            if (pc.sink) {
                for (int j = 0; j < group; ++j)
                    for (std::size_t t = s0; t < s1; ++t) {
                        const float* k = sink(ks, kv_head, pc, t);
                        sc[j * len + (t - s0)] =
                            float(scale * ops.dot(q + std::size_t(h0 + j) * d, k, std::size_t(d)));
                    }
                continue;
            }
            const BlockData block = stored_block(cache, lay, ks, pc.pos_begin);
            const float* queries = q_rot + std::size_t(h0) * d;
            float* smooth = q_smooth + std::size_t(group) * d;  // this KV head's channel scales, mean
            float* mean = smooth + d;
            if (block.smooth) {
                ops.widen(block.smooth + hd, std::size_t(d), smooth);
                for (int j = 0; j < group; ++j) {
                    const float* qh = q + std::size_t(h0 + j) * d;
                    float* qs = q_smooth + std::size_t(j) * d;
                    for (int i = 0; i < d; ++i) qs[i] = qh[i] * smooth[i];
                    kern.rotate(state->signs.data(), qs, qs);
                    for (int i = 0; i < d; ++i) qs[i] *= scale;
                }
                queries = q_smooth;
            }
            state->score(queries, std::size_t(group), &ks.codes[(base + s0) * ks.code_bytes], key_scales + s0,
                         s1 - s0, sc, len);
            if (block.mean) {
                ops.widen(block.mean + hd, std::size_t(d), mean);
                for (int j = 0; j < group; ++j) {
                    const float offset = float(scale * ops.dot(q + std::size_t(h0 + j) * d, mean, std::size_t(d)));
                    for (std::size_t t = 0; t < s1 - s0; ++t) sc[j * len + t] += offset;
                }
            }
        }
        if (shaping.shapes_scores())
            for (auto [b, e] : runs)
                for (std::size_t ip = b; ip < e; ++ip)
                    if (span(pieces[ip], s0, s1))
                        for (int j = 0; j < group; ++j)
                            shape(scores + j * len + (s0 - c0), h0 + j, query_pos, pieces[ip], s0, s1);
        // Each head's softmax, its weights normalized (summing to 1: the accumulator
        // stays within the values' magnitude).
        for (int j = 0; j < group; ++j) {
            float* row = scores + std::size_t(j) * len;
            const float m = softmax.max(row, len);
            const double sum = softmax.exp_sum(row, len, m);
            ops.scale(row, len, static_cast<float>(1 / sum));
            float* acc = o.acc + std::size_t(j) * o.stride * d;
            std::fill(acc, acc + d, 0.0f);
            std::fill(o.extra + std::size_t(j) * o.stride * d, o.extra + (std::size_t(j) * o.stride + 1) * d, 0.0);
            o.partials[std::size_t(j) * o.partial_stride] = {m, sum};
        }
        // The values, each unpacked once for the group's heads.
        for (auto [b, e] : runs)
          for (std::size_t ip = b; ip < e; ++ip) {
            const Piece& pc = pieces[ip];
            if (!span(pc, s0, s1)) continue;
            const float* w = scores + (s0 - c0);  // head j's weights at w + j * len
            if (pc.sink) {
                for (int j = 0; j < group; ++j) {
                    double* extra = o.extra + std::size_t(j) * o.stride * d;
                    for (std::size_t t = s0; t < s1; ++t) {
                        const float* v = sink(vs, kv_head, pc, t);
                        for (int i = 0; i < d; ++i) extra[i] += double(w[j * len + (t - s0)]) * v[i];
                    }
                }
                continue;
            }
            state->value_sum(w, len, std::size_t(group), &vs.codes[(base + s0) * vs.code_bytes],
                             value_scales + s0, s1 - s0, o.acc, o.stride * d);
            if (const std::uint16_t* stored = stored_block(cache, lay, vs, pc.pos_begin).mean) {
                float* mean = q_smooth + std::size_t(group + 1) * d;  // the scratch row of the keys' mean, free now
                ops.widen(stored + hd, std::size_t(d), mean);
                for (int j = 0; j < group; ++j) {
                    double* extra = o.extra + std::size_t(j) * o.stride * d;
                    double wsum = 0;
                    for (std::size_t t = 0; t < s1 - s0; ++t) wsum += w[j * len + t];
                    for (int i = 0; i < d; ++i) extra[i] += wsum * mean[i];
                }
            }
        }
    }
};

// One decode call's flash-decoding: task (g, c) runs KV head g's query heads over
// chunk c; merge() combines each query head's chunks and writes out.
struct DecodeJob {
    const ChunkAttention& attend;
    const fa_tq_stream &keys, &values;
    const Chunking& chunks;
    std::size_t n;
    int d;
    bool f16;
    float *key_scales, *value_scales;  // [kv_head][n]: halves widened by each chunk's task
    float* scores;                     // [task][group][chunks.longest]
    float* q_smooth;                   // [task][group + 2][d]
    float* acc;                        // [query head][chunk][d]
    double* extra;                     // [query head][chunk][d]
    Partial* partials;                 // [query head][chunk]

    static void task(void* arg, int index) { static_cast<const DecodeJob*>(arg)->run(index); }

    void run(int index) const {
        const std::size_t t = std::size_t(index), g = t / chunks.count, c = t % chunks.count;
        const std::size_t c0 = chunks.bounds[c], c1 = chunks.bounds[c + 1];
        const float* ks = widen(keys, g, c0, c1, key_scales);
        const float* vs = widen(values, g, c0, c1, value_scales);
        const std::size_t p = g * std::size_t(attend.group) * chunks.count + c;  // (first head of g, chunk c)
        attend.run(int(g), ks, vs, c0, c1, scores + t * attend.group * chunks.longest,
                   q_smooth + t * (attend.group + 2) * d,
                   {acc + p * d, extra + p * d, chunks.count, partials + p, chunks.count});
    }

    // KV head g's scales as floats, slots [c0, c1) made ready.
    const float* widen(const fa_tq_stream& s, std::size_t g, std::size_t c0, std::size_t c1, float* buf) const {
        const std::size_t base = attend.cache->stream_index(int(g));
        if (!f16) return &s.scales32[base];
        float* head = buf + g * n;
        attend.ops.widen(&s.scales16[base + c0], c1 - c0, head + c0);
        return head;
    }

    // The merge as tasks, one per query head: buffers [head][d] and [head][2d], out [head][d].
    struct Merge {
        const DecodeJob* job;
        float* merged;
        double* merged_extra;
        float* out;
        static void task(void* arg, int h) {
            const Merge& m = *static_cast<const Merge*>(arg);
            const std::size_t d = std::size_t(m.job->d);
            m.job->merge(h, m.merged + h * d, m.merged_extra + 2 * h * d, m.out + h * d);
        }
    };

    // Query head h's output: its chunks merged by log-sum-exp (exact for one chunk).
    void merge(int h, float* merged, double* merged_extra, float* out) const {
        const tq_kernels& kern = *attend.state->kernels;
        const Partial* p = partials + std::size_t(h) * chunks.count;
        const float* a = acc + std::size_t(h) * chunks.count * d;
        const double* e = extra + std::size_t(h) * chunks.count * d;
        if (chunks.count == 1) {
            kern.unrotate(attend.state->signs.data(), a, out);
            const float share = float(attend.sink_share(h, p[0].max, p[0].sum));
            for (int i = 0; i < d; ++i) out[i] = (out[i] + float(e[i])) * share;
            return;
        }
        float m = p[0].max;
        for (std::size_t c = 1; c < chunks.count; ++c) m = std::max(m, p[c].max);
        double total = 0;
        for (std::size_t c = 0; c < chunks.count; ++c) total += p[c].sum * std::exp(double(p[c].max) - m);
        std::fill(merged_extra, merged_extra + 2 * d, 0.0);  // [0, d): acc, [d, 2d): extra
        for (std::size_t c = 0; c < chunks.count; ++c) {
            const double w = p[c].sum * std::exp(double(p[c].max) - m) / total;
            for (int i = 0; i < d; ++i) {
                merged_extra[i] += w * a[c * d + i];
                merged_extra[d + i] += w * e[c * d + i];
            }
        }
        for (int i = 0; i < d; ++i) merged[i] = float(merged_extra[i]);
        kern.unrotate(attend.state->signs.data(), merged, out);
        const float share = float(attend.sink_share(h, m, total));
        for (int i = 0; i < d; ++i) out[i] = (out[i] + float(merged_extra[d + i])) * share;
    }
};


// A prefill call.  KV head g's query rows (token x query head of its group) are cut
// into tiles of about kTileRows rows (whole tokens); task (g, k) runs tiles k, k + T,
// ... (T tile tasks per KV head, so that the scratch stays bounded and the causal
// tiles' unequal work spreads over the tasks).  A tile walks the visible slots in
// spans of kSpan: per piece one score-kernel call and one value-kernel call for all
// of the tile's rows that see the span, so each key and value is unpacked once per
// pass of the kernels' query block and read from memory once per tile.  Each row keeps
// a running max, sum and normalized output across spans (online softmax): a span's
// weights are exp(s - m) / total and the row's output so far is scaled by
// old_sum exp(old_max - m) / total, both at most 1.  A tile of kDenseRows rows or more
// decodes each block of slots past the first span once and multiplies densely
// (DenseRun), the levers applied to the decoded keys and values.
struct PrefillJob {
    static constexpr std::size_t kTileRows = 256;
    static constexpr std::size_t kSpan = FA_TQ_PARALLEL_CHUNK;
    static constexpr std::size_t kMaxTasks = 128;
    static constexpr std::size_t kDenseRows = 16;  // tiles of at least this many rows decode their spans

    // Slots decoded at once by a dense tile: about 8192 floats per buffer, a multiple of 16.
    static std::size_t dense_block(int d) { return std::clamp<std::size_t>(8192 / std::size_t(d) / 16 * 16, 16, 64); }

    const ChunkAttention& at;  // pieces, sinks, softmax, ops (its q and q_rot are unused)
    int pos, n_tokens, n_q_heads, d;
    const float* q;      // [token][query head][d], as given
    const float* q_rot;  // [kv head][token][group][d], scale * R q
    const float* key_scales;    // [kv_head][n] as floats
    const float* value_scales;
    std::size_t n, tile_tokens, tiles, tile_tasks;
    float* scores;    // [task][tile rows][kSpan]
    float* q_smooth;  // [task][tile rows + 2][d]
    float* decoded;   // [task][2][dense_block][d]: a dense tile's decoded keys or values, the keys transposed
    float* acc;       // [kv head][token][group][d], running and normalized (rotated domain; original past a dense tile's first span)
    double* extra;    // [kv head][token][group][d], running (original domain: means and sinks)
    Partial* running; // [kv head][token][group]
    float* out;

    // Query tokens per tile and tile tasks per KV head, for a call's shape.
    static std::size_t tokens_per_tile(int group) { return std::max<std::size_t>(1, kTileRows / std::size_t(group)); }
    static std::size_t tasks_per_head(std::size_t tiles, int kv_heads) {
        return std::min(tiles, std::max<std::size_t>(1, kMaxTasks / std::size_t(kv_heads)));
    }

    static void task(void* arg, int index) { static_cast<const PrefillJob*>(arg)->run(index); }

    void run(int index) const {
        const std::size_t t = std::size_t(index), g = t / tile_tasks, rows = tile_tokens * std::size_t(at.group);
        for (std::size_t tile = t % tile_tasks; tile < tiles; tile += tile_tasks)
            run_tile(int(g), tile, scores + t * rows * kSpan, q_smooth + t * (rows + 2) * std::size_t(d),
                     decoded + t * 2 * dense_block(d) * std::size_t(d));
    }

    // A dense span's keys (or values) of consecutive slots, decoded into a tile's buffer
    // across the span's pieces (each with its own levers) and multiplied a block of up to
    // dense_block(d) slots at a time: when the block is full, where the next piece's slots
    // do not follow on, and at the span's end.  Keys: the scores of m query rows (rows:
    // [m][d], original domain, scaled), slot t of row r to out[r * kSpan + t - c0].
    // Values: acc row r (out + r * d) += the sum over the slots t of rows[r * kSpan + t - c0]
    // (the weights) times the value.
    struct DenseRun {
        const float* rows;
        std::size_t m, c0;
        float* out;
        float* dec;                 // 2 * dense_block(d) * d floats: the block, then the keys transposed
        std::size_t stream;         // the KV head's first stream slot
        const float* scales;        // the KV head's, per slot
        std::size_t first = 0, count = 0;  // slots [first, first + count) decoded, not yet multiplied
    };

    // Decodes slots [s0, s1) of one piece of stream s into run's block, mapped back by the
    // piece's levers (x = mul * x' + add; mul or add null where the piece has none), and
    // multiplies the block (flush) when it is full or where these slots do not follow on.
    template <class Flush>
    void decode_into(DenseRun& run, const tq_bit_kernels& kern, const fa_tq_stream& s, std::size_t s0, std::size_t s1,
                     const float* mul, const float* add, Flush flush) const {
        const std::size_t block = dense_block(d), dim = std::size_t(d);
        if (run.count > 0 && run.first + run.count != s0) flush(run);
        while (s0 < s1) {
            if (run.count == 0) run.first = s0;
            const std::size_t take = std::min(s1 - s0, block - run.count);
            float* x = run.dec + run.count * dim;
            for (std::size_t u = 0; u < take; ++u)
                kern.decode(at.state->signs.data(), &s.codes[(run.stream + s0 + u) * s.code_bytes], run.scales[s0 + u],
                            x + u * dim);
            if (mul || add) at.ops.affine_rows(x, take, dim, mul, add);
            run.count += take;
            s0 += take;
            if (run.count == block) flush(run);
        }
    }

    // The pending keys' scores: transposed (padded with zeros to a multiple of 16) and multiplied.
    void flush_keys(DenseRun& run) const {
        if (run.count == 0) return;
        const std::size_t dim = std::size_t(d), padded = (run.count + 15) / 16 * 16;
        float* transposed = run.dec + dense_block(d) * dim;
        at.ops.transpose(run.dec, run.count, dim, transposed, padded);
        at.state->kernels->product(run.m, run.count, dim, run.rows, dim, transposed, padded, run.out + (run.first - run.c0),
                                   kSpan, 0);
        run.count = 0;
    }

    // The pending values' weighted sums, added to the acc rows (the product reads each value
    // row whole: every head dim is a multiple of 16).
    void flush_values(DenseRun& run) const {
        if (run.count == 0) return;
        const std::size_t dim = std::size_t(d);
        at.state->kernels->product(run.m, dim, run.count, run.rows + (run.first - run.c0), kSpan, run.dec, dim, run.out,
                                   dim, 1);
        run.count = 0;
    }

    void run_tile(int g, std::size_t tile, float* sc, float* qs, float* dec) const {
        const tq_kernels& kern = *at.state->kernels;
        const fa_tq_stream& ks = at.lay.keys;
        const fa_tq_stream& vs = at.lay.values;
        const int group = at.group, i0 = int(tile * tile_tokens), i1 = std::min(n_tokens, i0 + int(tile_tokens));
        const std::size_t rows = std::size_t(i1 - i0) * group, base = (std::size_t(g) * n_tokens + i0) * group;
        const std::size_t sbase = at.cache->stream_index(g), hd = std::size_t(g) * d;
        const float* kscale = key_scales + g * n;
        const float* vscale = value_scales + g * n;
        float* smooth = qs + rows * d;  // a block's smoothing scales, then its mean, widened
        float* mean = smooth + d;
        // A dense tile runs its first span with the fused kernels all the same where a row
        // may see no more: such a row gets the single calls' bits (the batch's outputs do
        // not depend on how a sequence's tokens were split into calls); its acc is then
        // unrotated in place, and the later spans are dense.  Where even the tile's first
        // token sees past the first span, every span is dense.
        const bool dense = rows >= kDenseRows, dense_from_start = dense && std::size_t(pos + i0) >= kSpan;
        bool prepared = false, prepared_rotated = false;  // whether qs holds the tile's queries, and how
        const std::uint16_t* prepared_for = nullptr;       // the record they are smoothed by
        // Row r: token i0 + r / group, query head g * group + r % group, as given.
        auto query = [&](std::size_t r) {
            return q + (std::size_t(i0) + r / group) * n_q_heads * d + (std::size_t(g) * group + r % group) * d;
        };
        // qs's rows: softmax_scale (q * sigma), rotated or not (sigma = 1 where sm is null).
        auto prepare = [&](const std::uint16_t* sm, bool rotated) {
            if (prepared && prepared_for == sm && prepared_rotated == rotated) return;
            if (sm) at.ops.widen(sm + hd, std::size_t(d), smooth);
            for (std::size_t r = 0; r < rows; ++r) {  // the attend ops' loops: vectorized, the same bits
                float* qr = qs + r * d;
                std::copy(query(r), query(r) + d, qr);
                if (sm) at.ops.affine_rows(qr, 1, std::size_t(d), smooth, nullptr);
                if (rotated) kern.rotate(at.state->signs.data(), qr, qr);
                at.ops.scale(qr, std::size_t(d), at.scale);
            }
            prepared = true;
            prepared_for = sm;
            prepared_rotated = rotated;
        };
        const std::size_t needed = std::size_t(pos + i1);  // slots the tile's last token sees
        for (std::size_t c0 = 0; c0 < needed; c0 += kSpan) {
            const std::size_t c1 = std::min(needed, c0 + kSpan);
            const bool dense_span = dense && (c0 > 0 || dense_from_start);
            // Tokens i >= first see slots of the span (slot < pos + i + 1): rows r0.. of the tile.
            const int first = std::max(i0, int(long(c0) - pos));
            const std::size_t r0 = std::size_t(first - i0) * group, active = rows - r0;
            const auto runs = at.candidates(c0, c1);
            DenseRun dense_keys{qs + r0 * d, active, c0, sc + r0 * kSpan, dec, sbase, kscale};
            std::size_t s0, s1;
            auto span = [&](const Piece& pc) {
                s0 = std::max(pc.slot_begin, c0);
                s1 = std::min(slot_end(pc), c1);
                return s0 < s1;
            };
            for (auto [b, e] : runs)
                for (std::size_t ip = b; ip < e; ++ip) {
                    const Piece& pc = at.pieces[ip];
                    if (!span(pc)) continue;
                    float* s = sc + (s0 - c0);  // row r at s + r * kSpan
                    if (pc.sink) {
                        for (std::size_t r = r0; r < rows; ++r)
                            for (std::size_t t = s0; t < s1; ++t)
                                s[r * kSpan + (t - s0)] =
                                    float(at.scale * at.ops.dot(query(r), at.sink(ks, g, pc, t), std::size_t(d)));
                        continue;
                    }
                    const BlockData stored = stored_block(at.cache, at.lay, ks, pc.pos_begin);
                    if (dense_span) {  // the scaled queries once; sigma and mu go with the decoded keys
                        prepare(nullptr, false);
                        if (stored.smooth) at.ops.widen(stored.smooth + hd, std::size_t(d), smooth);
                        if (stored.mean) at.ops.widen(stored.mean + hd, std::size_t(d), mean);
                        decode_into(dense_keys, *kern.key, ks, s0, s1, stored.smooth ? smooth : nullptr,
                                    stored.mean ? mean : nullptr, [this](DenseRun& run) { flush_keys(run); });
                        continue;
                    }
                    const float* queries = q_rot + base * d;
                    if (stored.smooth) {
                        prepare(stored.smooth, true);  // every row of the tile, once per block
                        queries = qs;
                    }
                    at.state->score(queries + r0 * d, active, &ks.codes[(sbase + s0) * ks.code_bytes], kscale + s0,
                                    s1 - s0, s + r0 * kSpan, kSpan);
                    if (stored.mean) {  // the fused kernels' scores: the mean's, added per row
                        at.ops.widen(stored.mean + hd, std::size_t(d), mean);
                        for (std::size_t r = r0; r < rows; ++r) {
                            const float offset = float(at.scale * at.ops.dot(query(r), mean, std::size_t(d)));
                            for (std::size_t t = 0; t < s1 - s0; ++t) s[r * kSpan + t] += offset;
                        }
                    }
                }
            flush_keys(dense_keys);
            if (at.shaping.shapes_scores())
                for (auto [b, e] : runs)
                    for (std::size_t ip = b; ip < e; ++ip) {
                        if (!span(at.pieces[ip])) continue;
                        for (std::size_t r = r0; r < rows; ++r) {
                            const long qpos = long(pos) + i0 + long(r / group);  // slots past it: no weight
                            const std::size_t t1 = std::min(s1, std::size_t(qpos + 1));
                            if (t1 > s0)
                                at.shape(sc + r * kSpan + (s0 - c0), g * group + int(r % group), qpos, at.pieces[ip],
                                         s0, t1);
                        }
                    }
            // Each row's softmax over the slots its token sees, folded into its running state.
            for (std::size_t r = r0; r < rows; ++r) {
                const int i = i0 + int(r / group);
                const std::size_t seen = std::min(c1, std::size_t(pos + i + 1)) - c0;
                float* row = sc + r * kSpan;
                Partial& run = running[base + r];
                float* a = acc + (base + r) * d;
                double* e = extra + (base + r) * d;
                const float span_max = at.softmax.max(row, seen);
                const float m = c0 == 0 ? span_max : std::max(run.max, span_max);
                const double sum = at.softmax.exp_sum(row, seen, m);
                const double old = c0 == 0 ? 0 : run.sum * std::exp(double(run.max) - m), total = old + sum;
                if (c0 == 0) {
                    std::fill(a, a + d, 0.0f);
                    std::fill(e, e + d, 0.0);
                } else {
                    at.ops.rescale(a, e, std::size_t(d), old / total);
                }
                at.ops.scale(row, seen, static_cast<float>(1 / total));
                std::fill(row + seen, row + (c1 - c0), 0.0f);  // slots past the token: no weight
                run = {m, total};
            }
            // The values, each unpacked once per query block of the active rows.
            DenseRun dense_values{sc + r0 * kSpan, active, c0, acc + (base + r0) * d, dec, sbase, vscale};
            for (auto [b, e] : runs)
                for (std::size_t ip = b; ip < e; ++ip) {
                    const Piece& pc = at.pieces[ip];
                    if (!span(pc)) continue;
                    const float* w = sc + (s0 - c0);  // row r's weights at w + r * kSpan
                    if (pc.sink) {
                        for (std::size_t r = r0; r < rows; ++r) {
                            double* ex = extra + (base + r) * d;
                            for (std::size_t t = s0; t < s1; ++t) {
                                const float* v = at.sink(vs, g, pc, t);
                                for (int i = 0; i < d; ++i) ex[i] += double(w[r * kSpan + (t - s0)]) * v[i];
                            }
                        }
                        continue;
                    }
                    const std::uint16_t* stored = stored_block(at.cache, at.lay, vs, pc.pos_begin).mean;
                    if (stored) at.ops.widen(stored + hd, std::size_t(d), mean);
                    if (dense_span) {  // the mean added to the decoded values
                        decode_into(dense_values, *kern.value, vs, s0, s1, nullptr, stored ? mean : nullptr,
                                    [this](DenseRun& run) { flush_values(run); });
                        continue;
                    }
                    at.state->value_sum(w + r0 * kSpan, kSpan, active, &vs.codes[(sbase + s0) * vs.code_bytes],
                                        vscale + s0, s1 - s0, acc + (base + r0) * d, std::size_t(d));
                    if (stored) {  // the fused kernel's weights: the mean's share, per row
                        for (std::size_t r = r0; r < rows; ++r) {
                            double* ex = extra + (base + r) * d;
                            double wsum = 0;
                            for (std::size_t t = 0; t < s1 - s0; ++t) wsum += w[r * kSpan + t];
                            for (int i = 0; i < d; ++i) ex[i] += wsum * mean[i];
                        }
                    }
                }
            flush_values(dense_values);
            if (dense && c0 == 0 && !dense_from_start)  // every row saw the first span: its acc to the original domain
                for (std::size_t r = 0; r < rows; ++r)
                    kern.unrotate(at.state->signs.data(), acc + (base + r) * d, acc + (base + r) * d);
        }
        for (std::size_t r = 0; r < rows; ++r) {
            float* o = out + (query(r) - q);
            if (dense)
                std::copy(acc + (base + r) * d, acc + (base + r + 1) * d, o);
            else
                kern.unrotate(at.state->signs.data(), acc + (base + r) * d, o);
            const Partial& run = running[base + r];
            const float share = float(at.sink_share(g * group + int(r % group), run.max, run.sum));
            for (int j = 0; j < d; ++j) o[j] = (o[j] + float(extra[(base + r) * d + j])) * share;
        }
    }
};

// This thread's attention buffers, sized by reserve_* before anything is written.
struct Scratch {
    std::vector<float> q_rot, scores, q_smooth, decoded, acc, key_scales, value_scales, merged;
    std::vector<double> extra, merged_extra;
    std::vector<Partial> partials;
    std::vector<Piece> pieces;
    Chunking chunks;  // a decode call's, cut by reserve_decode

    // What both kinds of call use: rotated queries, per task and query row (a query
    // head of its group, or a tile's token x head) scores (chunk each) and a smoothed
    // query, per part (query head x chunk, or token x query head) a partial, and
    // scales floats of widened scales per kind.
    void resize(std::size_t queries, std::size_t tasks, std::size_t rows, std::size_t chunk, std::size_t parts,
                std::size_t scales, int d) {
        q_rot.resize(queries * d);
        scores.resize(tasks * rows * chunk);
        q_smooth.resize(tasks * (rows + 2) * d);
        acc.resize(parts * d);
        extra.resize(parts * d);
        partials.resize(parts);
        key_scales.resize(scales);
        value_scales.resize(scales);
    }
};
thread_local Scratch scratch;

// KV head g's scales of slots [0, n) as floats: the stream's own, or halves widened into buf.
const float* widen_all(const ChunkAttention& at, const fa_tq_stream& s, bool f16, std::size_t n, float* buf) {
    if (!f16) return s.scales32.data();
    for (int g = 0; g < at.cache->num_heads; ++g) {
        const std::size_t base = at.cache->stream_index(g);
        at.ops.widen(&s.scales16[base], n, buf + std::size_t(g) * n);
    }
    return buf;
}

void rotate_queries(const fa_tq_state* state, const float* q, std::size_t heads, float scale, float* q_rot) {
    const int d = state->head_dim;
    for (std::size_t h = 0; h < heads; ++h) {
        float* qr = q_rot + h * d;
        state->kernels->rotate(state->signs.data(), q + h * d, qr);
        for (int i = 0; i < d; ++i) qr[i] *= scale;
    }
}

}  // namespace

int reserve_decode(const char* fn, const fa_tq_cache* cache, const fa_tq_layer& lay, int pos, int n_q_heads) {
    const int kv_heads = cache->num_heads, d = lay.head_dim;
    const std::size_t n = static_cast<std::size_t>(std::min(pos + 1, cache->max_seq_len));
    const bool f16 = lay.levers.f16_scales;
    Scratch& s = scratch;
    try {
        cut_pieces(cache, lay, cache->first_visible(lay, pos), pos, s.pieces);
        const Chunking& chunks = s.chunks = chunking(n, cache->parallel(), kv_heads, s.pieces);
        const std::size_t tasks = std::size_t(kv_heads) * chunks.count, parts = std::size_t(n_q_heads) * chunks.count;
        s.resize(std::size_t(n_q_heads), tasks, std::size_t(n_q_heads / kv_heads), chunks.longest, parts,
                 f16 ? std::size_t(kv_heads) * n : 0, d);
        s.merged.resize(std::size_t(n_q_heads) * d);
        s.merged_extra.resize(2 * std::size_t(n_q_heads) * d);
    } catch (const std::bad_alloc&) {
        return fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory for " + std::to_string(n) + " scores");
    }
    return FA_TQ_OK;
}

void attend_decode(const fa_tq_state* state, const fa_tq_cache* cache, const fa_tq_layer& lay, int pos,
                   const float* q, int n_q_heads, float scale, const Shaping& shaping, float* out) {
    const int kv_heads = cache->num_heads, d = state->head_dim;
    const std::size_t n = static_cast<std::size_t>(std::min(pos + 1, cache->max_seq_len));
    Scratch& s = scratch;
    const Chunking& chunks = s.chunks;
    rotate_queries(state, q, std::size_t(n_q_heads), scale, s.q_rot.data());
    const ChunkAttention attend{state, cache, lay, s.pieces, q, s.q_rot.data(), scale, n_q_heads / kv_heads,
                                chunks.wrap, softmax_for(state->kernels->isa), attend_ops_for(state->kernels->isa),
                                cache->first_visible(lay, pos) > long(pos) + 1 - long(n), shaping, long(pos)};
    const DecodeJob job{attend,
                        lay.keys,
                        lay.values,
                        chunks,
                        n,
                        d,
                        lay.levers.f16_scales,
                        s.key_scales.data(),
                        s.value_scales.data(),
                        s.scores.data(),
                        s.q_smooth.data(),
                        s.acc.data(),
                        s.extra.data(),
                        s.partials.data()};
    cache->run_tasks(int(std::size_t(kv_heads) * chunks.count), &DecodeJob::task, const_cast<DecodeJob*>(&job));
    const DecodeJob::Merge merge{&job, s.merged.data(), s.merged_extra.data(), out};
    if (chunks.count == 1)  // nothing to merge: each head's unrotation, on this thread
        for (int h = 0; h < n_q_heads; ++h) DecodeJob::Merge::task(const_cast<DecodeJob::Merge*>(&merge), h);
    else
        cache->run_tasks(n_q_heads, &DecodeJob::Merge::task, const_cast<DecodeJob::Merge*>(&merge));
}

int reserve_prefill(const char* fn, const fa_tq_cache* cache, const fa_tq_layer& lay, int pos, int n_tokens,
                    int n_q_heads) {
    const int kv_heads = cache->num_heads, d = lay.head_dim, group = n_q_heads / kv_heads;
    const std::size_t n = std::size_t(pos) + std::size_t(n_tokens);
    const std::size_t tile_tokens = PrefillJob::tokens_per_tile(group);
    const std::size_t tiles = (std::size_t(n_tokens) + tile_tokens - 1) / tile_tokens;
    const std::size_t tasks = std::size_t(kv_heads) * PrefillJob::tasks_per_head(tiles, kv_heads);
    const std::size_t rows = std::size_t(n_tokens) * n_q_heads;
    const bool f16 = lay.levers.f16_scales;
    Scratch& s = scratch;
    try {
        s.resize(rows, tasks, tile_tokens * group, PrefillJob::kSpan, rows, f16 ? std::size_t(kv_heads) * n : 0, d);
        s.decoded.resize(tasks * 2 * PrefillJob::dense_block(d) * std::size_t(d));
        cut_pieces(cache, lay, 0, long(n) - 1, s.pieces);
    } catch (const std::bad_alloc&) {
        return fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory for " + std::to_string(n_tokens) +
                                                " query tokens over " + std::to_string(n) + " positions");
    }
    return FA_TQ_OK;
}

void attend_prefill(const fa_tq_state* state, const fa_tq_cache* cache, const fa_tq_layer& lay, int pos,
                    int n_tokens, const float* q, int n_q_heads, float scale, const Shaping& shaping, float* out) {
    const int kv_heads = cache->num_heads, d = state->head_dim, group = n_q_heads / kv_heads;
    const std::size_t n = std::size_t(pos) + std::size_t(n_tokens);
    const std::size_t tile_tokens = PrefillJob::tokens_per_tile(group);
    const std::size_t tiles = (std::size_t(n_tokens) + tile_tokens - 1) / tile_tokens;
    const std::size_t tile_tasks = PrefillJob::tasks_per_head(tiles, kv_heads);
    const bool f16 = lay.levers.f16_scales;
    Scratch& s = scratch;
    // The rotated queries by KV head ([kv head][token][group][d]): a tile's rows side by side.
    for (int i = 0; i < n_tokens; ++i)
        for (int h = 0; h < n_q_heads; ++h)
            rotate_queries(state, q + (std::size_t(i) * n_q_heads + h) * d, 1, scale,
                           &s.q_rot[((std::size_t(h / group) * n_tokens + i) * group + h % group) * d]);
    // Linear (or a ring not yet wrapped): slot = position, and every stream holds max_seq_len slots per head.
    const std::size_t stride = std::size_t(cache->max_seq_len);
    const ChunkAttention attend{state, cache, lay, s.pieces, nullptr, nullptr, scale, group, s.pieces.size(),
                                softmax_for(state->kernels->isa), attend_ops_for(state->kernels->isa), false, shaping};
    const float* ks = widen_all(attend, lay.keys, f16, n, s.key_scales.data());
    const float* vs = widen_all(attend, lay.values, f16, n, s.value_scales.data());
    const PrefillJob job{attend, pos, n_tokens, n_q_heads, d, q, s.q_rot.data(), ks, vs, f16 ? n : stride,
                         tile_tokens, tiles, tile_tasks, s.scores.data(), s.q_smooth.data(), s.decoded.data(), s.acc.data(),
                         s.extra.data(), s.partials.data(), out};
    cache->run_tasks(int(std::size_t(kv_heads) * tile_tasks), &PrefillJob::task, const_cast<PrefillJob*>(&job));
}

// Refuses (before anything is written) a query whose scores could overflow or turn
// NaN.  The scaled query: |softmax_scale R (q * sigma)| <= softmax_scale sigma_max |q|
// must stay well within float on its own (a zero key does not make inf * 0 finite),
// and its rotation needs |q * sigma| <= TQ_MAX_NORM.  The scores:
// |score| <= softmax_scale |q| max_t |k_t|, and |k_t| <= max sigma |key scale_t| + |mean_t|
// (|c_hat| <= 1, sigma the smoothing scales), or the sink's exact norm.
int check_score_range(const char* fn, const fa_tq_cache* cache, const fa_tq_layer& lay, const EncodedToken& key,
                      const float* k, const float* q, int n_q_heads, int d, float scale) {
    constexpr double kFloatReach = 1e37;  // scores and scaled queries stay below: a margin to FLT_MAX for sums
    const fa_tq_stream& s = lay.keys;
    // What the stream holds (its bounds since the last clear), and this token's key.
    double scale_max = s.scale_bound, extra_max = s.extra_bound, smooth_max = s.smooth_bound;
    for (std::uint16_t x : key.smooth) smooth_max = std::max(smooth_max, double(half_to_float(x)));
    for (float x : key.scales) scale_max = std::max(scale_max, double(std::abs(x)));
    for (std::size_t i = 0; i + d <= key.mean.size(); i += d) extra_max = std::max(extra_max, half_norm(&key.mean[i], d));
    for (int h = 0; h < cache->num_heads; ++h) extra_max = std::max(extra_max, norm(k + std::size_t(h) * d, d));
    double q_max = 0;
    for (int h = 0; h < n_q_heads; ++h) q_max = std::max(q_max, norm(q + std::size_t(h) * d, d));
    if (smooth_max * q_max > TQ_MAX_NORM(d))  // its rotation would overflow
        return fail(TQ_ERROR_RANGE, std::string(fn) + ": a query head's norm " + magnitude(q_max) +
                                        (smooth_max > 1 ? " times the smoothing scales' " + magnitude(smooth_max) : "") +
                                        " exceeds TQ_MAX_NORM(" + std::to_string(d) + ")");
    if (double(scale) * smooth_max * q_max > kFloatReach)
        return fail(TQ_ERROR_RANGE, std::string(fn) + ": softmax_scale x |q| reaches " +
                                        magnitude(double(scale) * smooth_max * q_max) +
                                        ", beyond what float queries hold (1e37)");
    const double reach = double(scale) * q_max * (smooth_max * scale_max + extra_max);
    if (reach > kFloatReach)
        return fail(TQ_ERROR_RANGE, std::string(fn) + ": |q| x |k| x softmax_scale reaches " + magnitude(reach) +
                                        ", beyond what float scores hold (1e37)");
    return FA_TQ_OK;
}

// Smoothing learns the channel energies of each KV head's queries (its group's):
// every query head of a group is one more sample of its KV head's.
void learn_queries(fa_tq_layer& lay, const float* q, int n_q_heads, int kv_heads, int d) {
    if (!lay.levers.smooth_keys) return;
    const int group = n_q_heads / kv_heads;
    for (int h = 0; h < n_q_heads; ++h)
        for (int i = 0; i < d; ++i) {
            const double x = q[std::size_t(h) * d + i];
            lay.query_sum_sq[std::size_t(h / group) * d + i] += x * x;
        }
    lay.query_count += group;
}


}  // namespace tq::detail
