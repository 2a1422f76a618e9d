// The fused attention on the packed cache: its maths (below), the range check and
// what smoothing learns from queries, each thread's scratch.  One query token
// (decode: fa_tq_decode.cpp) or a chunk of them (prefill: fa_tq_prefill.cpp) runs as
// tasks for the cache's executor, over fa_tq_chunk_attention.hpp's chunks.
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
#include "fa_tq_chunk_attention.hpp"

#include "half_float.hpp"
#include "last_error.hpp"
#include "norms.hpp"

#include <cstdio>
#include <string>

namespace tq::detail {
namespace {

// A magnitude in a message: "1.2e+39".
std::string magnitude(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", x);
    return text;
}

}  // namespace

Scratch& attend_scratch() {
    thread_local Scratch scratch;
    return scratch;
}

void rotate_queries(const fa_tq_state* state, const float* q, std::size_t heads, float scale, float* q_rot) {
    const int d = state->head_dim;
    for (std::size_t h = 0; h < heads; ++h) {
        float* qr = q_rot + h * d;
        state->kernels->rotate(state->signs.data(), q + h * d, qr);
        for (int i = 0; i < d; ++i) qr[i] *= scale;
    }
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
