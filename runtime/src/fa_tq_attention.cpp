// fa_tq_attention: decode-step attention fused on the packed cache.
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
// Sink positions use their exact vectors instead (docs/levers.md).
#include "fa_tq_blocks.hpp"
#include "fa_tq_checks.hpp"
#include "fa_tq_token.hpp"
#include "half_float.hpp"
#include "last_error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <new>
#include <string>

using namespace tq::detail;

namespace {

// Positions [begin, end) of one kind: sinks, or one mean block, in consecutive slots.
struct Piece {
    long pos_begin, pos_end;  // cache positions (absolute minus evicted)
    std::size_t slot_begin;
    bool sink;
};

// Cuts the visible positions [first, last] at sink and block boundaries and at the ring's wrap.
void cut_pieces(const fa_tq_cache* cache, const fa_tq_layer& lay, long first, long last, std::vector<Piece>& out) {
    out.clear();
    const bool blocks = has_blocks(lay.keys) || has_blocks(lay.values);
    for (long p = first; p <= last;) {
        const long a = p + cache->evicted;
        long end = last + 1;
        const bool sink = is_sink(lay.levers, a);
        if (sink)
            end = std::min(end, lay.levers.sinks - cache->evicted);
        else if (blocks)
            end = std::min(end, block_end(lay.levers, block_of(lay.levers, a)) - cache->evicted);
        if (cache->ring) end = std::min(end, (p / cache->max_seq_len + 1) * long(cache->max_seq_len));
        out.push_back({p, end, std::size_t(cache->slot(int(p))), sink});
        p = end;
    }
}

double norm(const float* x, int d) {
    double s = 0;
    for (int i = 0; i < d; ++i) s += double(x[i]) * x[i];
    return std::sqrt(s);
}

double half_norm(const std::uint16_t* x, int d) {
    double s = 0;
    for (int i = 0; i < d; ++i) s += double(half_to_float(x[i])) * half_to_float(x[i]);
    return std::sqrt(s);
}

// A magnitude in a message: "1.2e+39".
std::string magnitude(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", x);
    return text;
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
    double scale_max = 0, extra_max = 0, smooth_max = 1;
    for (const auto* v : {&s.smooth, &key.smooth})
        for (std::uint16_t x : *v) smooth_max = std::max(smooth_max, double(half_to_float(x)));
    for (float x : key.scales) scale_max = std::max(scale_max, double(std::abs(x)));
    for (float x : s.scales32) scale_max = std::max(scale_max, double(std::abs(x)));
    for (std::uint16_t x : s.scales16) scale_max = std::max(scale_max, double(std::abs(half_to_float(x))));
    for (const auto* m : {&s.means, &key.mean})
        for (std::size_t i = 0; i + d <= m->size(); i += d) extra_max = std::max(extra_max, half_norm(&(*m)[i], d));
    for (std::size_t i = 0; i + d <= s.sink_vectors.size(); i += d)
        extra_max = std::max(extra_max, norm(&s.sink_vectors[i], d));
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

// Smoothing learns the channel energies of each KV head's queries (its group's).
void learn_queries(fa_tq_layer& lay, const float* q, int n_q_heads, int kv_heads, int d) {
    if (!lay.levers.smooth_keys) return;
    const int group = n_q_heads / kv_heads;
    for (int h = 0; h < n_q_heads; ++h)
        for (int i = 0; i < d; ++i) {
            const double x = q[std::size_t(h) * d + i];
            lay.query_sum_sq[std::size_t(h / group) * d + i] += x * x / group;
        }
    ++lay.query_count;
}

// The scales of one KV head's n slots as floats (halves widened into buf).
const float* head_scales(const fa_tq_stream& s, const fa_tq_cache* cache, int head, std::size_t n, bool f16,
                         std::vector<float>& buf) {
    const std::size_t base = cache->stream_index(head);
    if (!f16) return &s.scales32[base];
    buf.resize(n);
    for (std::size_t i = 0; i < n; ++i) buf[i] = half_to_float(s.scales16[base + i]);
    return buf.data();
}

// One query head over its KV head's visible positions (the pieces), writing out[d].
struct HeadAttention {
    const fa_tq_state* state;
    const fa_tq_cache* cache;
    const fa_tq_layer& lay;
    int kv_head;
    const float* key_scales;
    const float* value_scales;
    const std::vector<Piece>& pieces;
    std::size_t n;  // slots in use

    // The exact vector of the t-th position of a sink piece.
    const float* sink(const fa_tq_stream& s, const Piece& pc, std::size_t t) const {
        const std::size_t a = std::size_t(pc.pos_begin + cache->evicted) + t;
        return &s.sink_vectors[(std::size_t(kv_head) * lay.levers.sinks + a) * std::size_t(state->head_dim)];
    }

    void run(const float* q, float scale, std::vector<float>& q_rot, std::vector<float>& q_smooth,
             std::vector<float>& scores, std::vector<float>& acc, std::vector<double>& extra, float* out) const {
        const tq_kernels& kern = *state->kernels;
        const int d = state->head_dim;
        const fa_tq_stream& ks = lay.keys;
        const fa_tq_stream& vs = lay.values;
        const std::size_t base = cache->stream_index(kv_head), hd = std::size_t(kv_head) * d;
        kern.rotate(state->signs.data(), q, q_rot.data());
        for (float& x : q_rot) x *= scale;
        for (const Piece& pc : pieces) {
            const std::size_t count = std::size_t(pc.pos_end - pc.pos_begin), slot = pc.slot_begin;
            if (pc.sink) {
                for (std::size_t t = 0; t < count; ++t) {
                    const float* k = sink(ks, pc, t);
                    double dot = 0;
                    for (int i = 0; i < d; ++i) dot += double(q[i]) * k[i];
                    scores[slot + t] = float(scale * dot);
                }
                continue;
            }
            const BlockData block = stored_block(cache, lay, ks, pc.pos_begin);
            const float* query = q_rot.data();
            if (block.smooth) {
                for (int i = 0; i < d; ++i) q_smooth[i] = q[i] * half_to_float(block.smooth[hd + i]);
                kern.rotate(state->signs.data(), q_smooth.data(), q_smooth.data());
                for (float& x : q_smooth) x *= scale;
                query = q_smooth.data();
            }
            kern.key->score(query, &ks.codes[(base + slot) * ks.code_bytes], key_scales + slot, count, &scores[slot]);
            if (block.mean) {
                double dot = 0;
                for (int i = 0; i < d; ++i) dot += double(q[i]) * half_to_float(block.mean[hd + i]);
                const float offset = float(scale * dot);
                for (std::size_t t = 0; t < count; ++t) scores[slot + t] += offset;
            }
        }
        const float m = *std::max_element(scores.begin(), scores.begin() + std::ptrdiff_t(n));
        double sum = 0;
        for (std::size_t t = 0; t < n; ++t) {
            scores[t] = std::exp(scores[t] - m);
            sum += scores[t];
        }
        // Normalized weights (summing to 1) keep the accumulator within the values' magnitude.
        const float inv = static_cast<float>(1 / sum);
        for (std::size_t t = 0; t < n; ++t) scores[t] *= inv;
        std::fill(acc.begin(), acc.end(), 0.0f);
        std::fill(extra.begin(), extra.end(), 0.0);
        for (const Piece& pc : pieces) {
            const std::size_t count = std::size_t(pc.pos_end - pc.pos_begin), slot = pc.slot_begin;
            if (pc.sink) {
                for (std::size_t t = 0; t < count; ++t) {
                    const float* v = sink(vs, pc, t);
                    for (int i = 0; i < d; ++i) extra[i] += double(scores[slot + t]) * v[i];
                }
                continue;
            }
            kern.value->accumulate(&scores[slot], &vs.codes[(base + slot) * vs.code_bytes], value_scales + slot,
                                   count, acc.data());
            if (const std::uint16_t* mean = stored_block(cache, lay, vs, pc.pos_begin).mean) {
                double w = 0;
                for (std::size_t t = 0; t < count; ++t) w += scores[slot + t];
                for (int i = 0; i < d; ++i) extra[i] += w * half_to_float(mean[hd + i]);
            }
        }
        kern.unrotate(state->signs.data(), acc.data(), out);
        for (int i = 0; i < d; ++i) out[i] += float(extra[i]);
    }
};

}  // namespace

extern "C" int fa_tq_attention(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, const float* q,
                               int n_q_heads, const float* k, const float* v, float softmax_scale, float* out) {
    constexpr const char* fn = "fa_tq_attention";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
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
        if (int rc = check_write_pos(fn, cache, layer, pos, true)) return rc;
        if (int rc = check_write_pos(fn, cache, layer, pos, false)) return rc;
        fa_tq_layer& lay = cache->layers[std::size_t(layer)];
        const int newest = std::max(lay.keys.length, lay.values.length) - 1;
        if (cache->ring && pos < newest)
            return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": a ring cache attends from its newest position (" +
                                                       std::to_string(newest) + "), not pos " + std::to_string(pos));
        if (int rc = check_finite(fn, q, std::size_t(n_q_heads) * d, "q")) return rc;

        thread_local EncodedToken key_token, value_token;
        thread_local std::vector<float> q_rot, q_smooth, scores, acc, key_scales, value_scales;
        thread_local std::vector<double> extra;
        thread_local std::vector<Piece> pieces;
        if (int rc = encode_token(fn, state, cache, layer, pos, k, true, key_token)) return rc;
        if (int rc = encode_token(fn, state, cache, layer, pos, v, false, value_token)) return rc;
        // Positions 0..pos; a ring holds the last max_seq_len of them, in slots [0, n) either way.
        const std::size_t n = static_cast<std::size_t>(std::min(pos + 1, cache->max_seq_len));
        try {
            q_rot.resize(d);
            q_smooth.resize(d);
            acc.resize(d);
            extra.resize(d);
            scores.resize(n);
            cut_pieces(cache, lay, std::max(0L, long(pos) + 1 - long(n)), pos, pieces);
        } catch (const std::bad_alloc&) {
            return fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory for " + std::to_string(n) + " scores");
        }
        const float scale = softmax_scale > 0 ? softmax_scale : static_cast<float>(1 / std::sqrt(double(d)));
        if (int rc = check_score_range(fn, cache, lay, key_token, k, q, n_q_heads, d, scale)) return rc;
        commit_token(cache, layer, pos, true, key_token, k);
        commit_token(cache, layer, pos, false, value_token, v);
        learn_queries(lay, q, n_q_heads, kv_heads, d);

        const int group = n_q_heads / kv_heads;
        for (int g = 0; g < kv_heads; ++g) {
            const HeadAttention head{state,
                                     cache,
                                     lay,
                                     g,
                                     head_scales(lay.keys, cache, g, n, lay.levers.f16_scales, key_scales),
                                     head_scales(lay.values, cache, g, n, lay.levers.f16_scales, value_scales),
                                     pieces,
                                     n};
            for (int h = g * group; h < (g + 1) * group; ++h)
                head.run(q + std::size_t(h) * d, scale, q_rot, q_smooth, scores, acc, extra, out + std::size_t(h) * d);
        }
        return FA_TQ_OK;
    });
}
