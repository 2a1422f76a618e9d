// What decode (fa_tq_decode.cpp) and prefill (fa_tq_prefill.cpp) share: the
// attention of one KV head's query heads over chunks of its visible slots, with the
// call's shaped scores (fa_tq_attend_options), each thread's scratch, and the
// queries' rotation.  The maths: fa_tq_attend.cpp.
#pragma once

#include "attend_ops.hpp"
#include "fa_tq_attend.hpp"
#include "fa_tq_blocks.hpp"
#include "fa_tq_chunks.hpp"
#include "softmax.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace tq::detail {

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

// The calling thread's scratch (thread_local: tasks on other threads use only the
// buffers their job hands them).
Scratch& attend_scratch();

// q' = scale * R q for each of `heads` query heads.
void rotate_queries(const fa_tq_state* state, const float* q, std::size_t heads, float scale, float* q_rot);

}  // namespace tq::detail
