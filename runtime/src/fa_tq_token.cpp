// encode_token / commit_token: one token's keys or values into the cache.
#include "fa_tq_token.hpp"

#include "fa_tq_blocks.hpp"
#include "fa_tq_checks.hpp"
#include "fa_tq_statistics.hpp"
#include "half_float.hpp"
#include "last_error.hpp"
#include "norms.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>

namespace tq::detail {
namespace {

std::size_t block_floats(const fa_tq_cache* cache, const fa_tq_layer& layer) {
    return std::size_t(cache->num_heads) * layer.head_dim;
}

// Drops the leading blocks that end at or before absolute position `oldest`.
void drop_blocks_before(const fa_tq_cache* cache, const fa_tq_layer& layer, fa_tq_stream& s, long oldest) {
    const std::size_t per_block = block_floats(cache, layer);
    long drop = 0;
    while (drop < s.blocks && block_end(layer.levers, s.first_block + drop) <= oldest) ++drop;
    for (auto* v : {&s.means, &s.smooth})
        if (!v->empty()) v->erase(v->begin(), v->begin() + std::ptrdiff_t(std::size_t(drop) * per_block));
    s.first_block += drop;
    s.blocks -= drop;
}

}  // namespace

BlockData stored_block(const fa_tq_cache* cache, const fa_tq_layer& layer, const fa_tq_stream& s, long pos) {
    const long a = pos + cache->evicted;
    if (!has_blocks(s) || is_sink(layer.levers, a)) return {};
    const long i = block_of(layer.levers, a) - s.first_block;
    if (i < 0 || i >= s.blocks) return {};
    const std::size_t at = std::size_t(i) * block_floats(cache, layer);
    return {s.centered ? &s.means[at] : nullptr, s.smoothed ? &s.smooth[at] : nullptr};
}

int encode_token(const char* fn, const fa_tq_state* state, const fa_tq_cache* cache, int layer, int pos,
                 const float* vec, bool is_key, EncodedToken& token) {
    const fa_tq_layer& lay = cache->layers[std::size_t(layer)];
    const fa_tq_stream& s = lay.stream(is_key);
    const tq_bit_kernels& k = is_key ? *state->kernels->key : *state->kernels->value;
    const int d = state->head_dim, heads = cache->num_heads;
    const std::size_t n = std::size_t(heads) * d;
    const bool blocked = has_blocks(s) && !is_sink(lay.levers, pos + cache->evicted);
    BlockData block = blocked ? stored_block(cache, lay, s, pos) : BlockData{};
    token.opens_block = blocked && !block.mean && !block.smooth;
    try {
        token.codes.resize(k.code_bytes * heads);
        token.scales.resize(heads);
        token.encoded.resize(n);
        token.mean.resize(token.opens_block && s.centered ? n : 0);
        token.smooth.resize(token.opens_block && s.smoothed ? n : 0);
        token.stats.resize(3 * std::size_t(d));
    } catch (const std::bad_alloc&) {
        return fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory for one token's codes");
    }
    const float* src = vec;
    if (blocked) {
        if (token.opens_block) {
            if (s.centered) block_mean(s, heads, d, token.mean.data());
            if (s.smoothed) block_smooth(lay, s, heads, d, token.stats, token.smooth.data());
            block = {s.centered ? token.mean.data() : nullptr, s.smoothed ? token.smooth.data() : nullptr};
        }
        for (std::size_t i = 0; i < n; ++i) {
            float x = vec[i];
            if (block.mean) x -= half_to_float(block.mean[i]);
            if (block.smooth) x /= half_to_float(block.smooth[i]);
            token.encoded[i] = x;
        }
        src = token.encoded.data();
    }
    for (int h = 0; h < heads; ++h) {
        const int rc = k.encode(state->signs.data(), src + std::size_t(h) * d, state->scale_kind,
                                &token.codes[h * k.code_bytes], &token.scales[h]);
        if (rc == TQ_ERROR_NONFINITE) {
            if (int bad = check_finite(fn, vec, n, "vec")) return bad;
            return fail(TQ_ERROR_RANGE, std::string(fn) + ": head " + std::to_string(h) +
                                            " leaves the float range once centered and smoothed");
        }
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
        s.scale_bound = std::max(s.scale_bound, double(std::abs(token.scales[h])));
    }
    const long a = pos + cache->evicted;
    const bool append = pos == s.length;
    s.length = std::max(s.length, pos + 1);
    if (is_sink(lay.levers, a)) {
        for (int h = 0; h < heads; ++h) {
            std::memcpy(&s.sink_vectors[(std::size_t(h) * lay.levers.sinks + std::size_t(a)) * d],
                        vec + std::size_t(h) * d, sizeof(float) * d);
            s.extra_bound = std::max(s.extra_bound, norm(vec + std::size_t(h) * d, d));
        }
        return;
    }
    if (!has_blocks(s)) return;
    if (cache->ring) drop_blocks_before(cache, lay, s, std::max(0, s.length - cache->max_seq_len));
    if (token.opens_block) {  // within the capacity reserved at creation
        if (s.blocks == 0) s.first_block = block_of(lay.levers, a);
        s.means.insert(s.means.end(), token.mean.begin(), token.mean.end());
        s.smooth.insert(s.smooth.end(), token.smooth.begin(), token.smooth.end());
        ++s.blocks;
        for (std::size_t i = 0; i < token.mean.size(); i += std::size_t(d))
            s.extra_bound = std::max(s.extra_bound, half_norm(&token.mean[i], d));
        for (std::uint16_t x : token.smooth) s.smooth_bound = std::max(s.smooth_bound, double(half_to_float(x)));
    }
    if (append) learn_vector(s, heads, d, vec);  // the running sums learn appended positions; overwrites keep them
}

void drop_evicted_blocks(fa_tq_cache* cache) {
    for (fa_tq_layer& lay : cache->layers)
        for (bool is_key : {true, false})
            if (has_blocks(lay.stream(is_key))) drop_blocks_before(cache, lay, lay.stream(is_key), cache->evicted);
}

}  // namespace tq::detail
