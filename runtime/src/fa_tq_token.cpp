// encode_token / commit_token: one token's keys or values into the cache.
#include "fa_tq_token.hpp"

#include "fa_tq_blocks.hpp"
#include "fa_tq_checks.hpp"
#include "half_float.hpp"
#include "last_error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>

namespace tq::detail {
namespace {

std::size_t mean_floats(const fa_tq_cache* cache, const fa_tq_layer& layer) {
    return std::size_t(cache->num_heads) * layer.head_dim;
}

// Drops the leading means of blocks that end at or before absolute position `oldest`.
void drop_means_before(const fa_tq_cache* cache, const fa_tq_layer& layer, fa_tq_stream& s, long oldest) {
    const std::size_t per_block = mean_floats(cache, layer);
    std::size_t drop = 0;
    while ((drop + 1) * per_block <= s.means.size() && block_end(layer.levers, s.first_block + long(drop)) <= oldest)
        ++drop;
    s.means.erase(s.means.begin(), s.means.begin() + std::ptrdiff_t(drop * per_block));
    s.first_block += long(drop);
}

}  // namespace

const std::uint16_t* stored_mean(const fa_tq_cache* cache, const fa_tq_layer& layer, const fa_tq_stream& s, long pos) {
    const long a = pos + cache->evicted;
    if (!s.centered || is_sink(layer.levers, a)) return nullptr;
    const std::size_t per_block = mean_floats(cache, layer);
    const long i = block_of(layer.levers, a) - s.first_block;
    if (i < 0 || std::size_t(i) >= s.means.size() / per_block) return nullptr;
    return &s.means[std::size_t(i) * per_block];
}

int encode_token(const char* fn, const fa_tq_state* state, const fa_tq_cache* cache, int layer, int pos,
                 const float* vec, bool is_key, EncodedToken& token) {
    const fa_tq_layer& lay = cache->layers[std::size_t(layer)];
    const fa_tq_stream& s = lay.stream(is_key);
    const tq_bit_kernels& k = is_key ? *state->kernels->key : *state->kernels->value;
    const int d = state->head_dim, heads = cache->num_heads;
    const std::size_t n = std::size_t(heads) * d;
    try {
        token.codes.resize(k.code_bytes * heads);
        token.scales.resize(heads);
        token.centered.resize(n);
        token.mean.clear();
    } catch (const std::bad_alloc&) {
        return fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory for one token's codes");
    }
    const float* src = vec;
    if (s.centered && !is_sink(lay.levers, pos + cache->evicted)) {
        const std::uint16_t* mean = stored_mean(cache, lay, s, pos);
        if (!mean) {  // pos opens a block: its mean is the running mean of what came before
            try {
                token.mean.resize(n);
            } catch (const std::bad_alloc&) {
                return fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory for a block mean");
            }
            for (std::size_t i = 0; i < n; ++i) {
                // Any stored mean keeps attention exact (it is added back); clamping keeps it a finite half.
                const double m = s.count ? s.sum[i] / double(s.count) : 0.0;
                token.mean[i] = float_to_half(float(std::clamp(m, -double(kHalfMax), double(kHalfMax))));
            }
            mean = token.mean.data();
        }
        for (std::size_t i = 0; i < n; ++i) token.centered[i] = vec[i] - half_to_float(mean[i]);
        src = token.centered.data();
    }
    for (int h = 0; h < heads; ++h) {
        const int rc = k.encode(state->signs.data(), src + std::size_t(h) * d, state->scale_kind,
                                &token.codes[h * k.code_bytes], &token.scales[h]);
        if (rc == TQ_ERROR_NONFINITE) return check_finite(fn, vec, n, "vec");
        if (rc != TQ_OK)
            return fail(static_cast<tq_status>(rc), std::string(fn) + ": head " + std::to_string(h) +
                                                        " has a norm beyond the float range");
        if (lay.levers.f16_scales) {
            if (!(std::abs(token.scales[h]) <= kHalfMax))
                return fail(TQ_ERROR_RANGE, std::string(fn) + ": head " + std::to_string(h) + "'s scale " +
                                                std::to_string(token.scales[h]) +
                                                " exceeds the half-float scale's range (65504); "
                                                "use FA_TQ_SCALE_FORMAT_F32 for such vectors");
            token.scales[h] = half_to_float(float_to_half(token.scales[h]));
        }
    }
    return FA_TQ_OK;
}

void commit_token(fa_tq_cache* cache, int layer, int pos, bool is_key, const EncodedToken& token, const float* vec) {
    fa_tq_layer& lay = cache->layers[std::size_t(layer)];
    fa_tq_stream& s = lay.stream(is_key);
    const int d = lay.head_dim, heads = cache->num_heads;
    const std::size_t slot = static_cast<std::size_t>(cache->slot(pos));
    for (int h = 0; h < heads; ++h) {
        const std::size_t i = cache->stream_index(h) + slot;
        std::memcpy(&s.codes[i * s.code_bytes], &token.codes[h * s.code_bytes], s.code_bytes);
        if (lay.levers.f16_scales)
            s.scales16[i] = float_to_half(token.scales[h]);
        else
            s.scales32[i] = token.scales[h];
    }
    const long a = pos + cache->evicted;
    const bool append = pos == s.length;
    s.length = std::max(s.length, pos + 1);
    if (is_sink(lay.levers, a)) {
        for (int h = 0; h < heads; ++h)
            std::memcpy(&s.sink_vectors[(std::size_t(h) * lay.levers.sinks + std::size_t(a)) * d],
                        vec + std::size_t(h) * d, sizeof(float) * d);
        return;
    }
    if (!s.centered) return;
    if (cache->ring) drop_means_before(cache, lay, s, std::max(0, s.length - cache->max_seq_len));
    if (!token.mean.empty()) {
        if (s.means.empty()) s.first_block = block_of(lay.levers, a);
        s.means.insert(s.means.end(), token.mean.begin(), token.mean.end());  // within the reserved capacity
    }
    if (append) {  // the running mean learns appended positions; overwrites keep it
        for (std::size_t i = 0; i < s.sum.size(); ++i) s.sum[i] += vec[i];
        ++s.count;
    }
}

void drop_evicted_means(fa_tq_cache* cache) {
    for (fa_tq_layer& lay : cache->layers)
        for (bool is_key : {true, false})
            if (lay.stream(is_key).centered) drop_means_before(cache, lay, lay.stream(is_key), cache->evicted);
}

}  // namespace tq::detail
