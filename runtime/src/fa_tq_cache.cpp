// The compressed cache: lifetime, quantize, dequantize, eviction, byte accounting.
#include "fa_tq_checks.hpp"
#include "fa_tq_token.hpp"
#include "last_error.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>

namespace tq::detail {

int encode_token(const char* fn, const fa_tq_state* state, const fa_tq_cache* cache, const float* vec, bool is_key,
                 std::vector<std::uint8_t>& codes, std::vector<float>& scales) {
    const tq_bit_kernels& k = is_key ? *state->kernels->key : *state->kernels->value;
    const int d = state->head_dim;
    try {
        codes.resize(k.code_bytes * cache->num_heads);
        scales.resize(cache->num_heads);
    } catch (const std::bad_alloc&) {
        return fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory for one token's codes");
    }
    for (int h = 0; h < cache->num_heads; ++h) {
        const int rc = k.encode(state->signs.data(), vec + static_cast<std::size_t>(h) * d, state->scale_kind,
                                &codes[h * k.code_bytes], &scales[h]);
        if (rc == TQ_ERROR_NONFINITE) return check_finite(fn, vec, std::size_t(cache->num_heads) * d, "vec");
        if (rc != TQ_OK)
            return fail(static_cast<tq_status>(rc), std::string(fn) + ": head " + std::to_string(h) +
                                                        " has a norm beyond the float range");
    }
    return FA_TQ_OK;
}

void commit_token(fa_tq_cache* cache, int layer, int pos, bool is_key, const std::vector<std::uint8_t>& codes,
                  const std::vector<float>& scales) {
    fa_tq_stream& s = cache->stream(is_key);
    const std::size_t slot = static_cast<std::size_t>(cache->slot(pos));
    for (int h = 0; h < cache->num_heads; ++h) {
        const std::size_t i = cache->stream_index(layer, h) + slot;
        std::memcpy(&s.codes[i * s.code_bytes], &codes[h * s.code_bytes], s.code_bytes);
        s.scales[i] = scales[h];
    }
    s.length[layer] = std::max(s.length[layer], pos + 1);
}

namespace {

fa_tq_cache* new_cache(const char* fn, const fa_tq_state* state, int num_layers, int num_heads, int max_seq_len,
                       bool ring) {
    if (check_state(fn, state)) return nullptr;
    auto bad = [&](const char* name, int v) {
        fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + name + " must be positive, got " + std::to_string(v));
        return nullptr;
    };
    if (num_layers <= 0) return bad("num_layers", num_layers);
    if (num_heads <= 0) return bad("num_heads", num_heads);
    if (max_seq_len <= 0) return bad("max_seq_len", max_seq_len);
    std::size_t slots = 0, bytes = 0;
    const std::size_t bytes_per_slot = state->kernels->key->code_bytes + state->kernels->value->code_bytes + 8;
    if (__builtin_mul_overflow(std::size_t(num_layers), std::size_t(num_heads), &slots) ||
        __builtin_mul_overflow(slots, std::size_t(max_seq_len), &slots) ||
        __builtin_mul_overflow(slots, bytes_per_slot, &bytes)) {
        fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": num_layers x num_heads x max_seq_len overflows memory sizes");
        return nullptr;
    }
    try {
        auto c = std::make_unique<fa_tq_cache>(fa_tq_cache{state->head_dim, state->key_eighths, state->value_eighths,
                                                           state->scale_kind, state->seed, num_layers, num_heads,
                                                           max_seq_len, ring, {}, {}});
        for (bool is_key : {true, false}) {
            fa_tq_stream& s = c->stream(is_key);
            s.code_bytes = (is_key ? state->kernels->key : state->kernels->value)->code_bytes;
            s.codes.assign(slots * s.code_bytes, 0);
            s.scales.assign(slots, 0.0f);
            s.length.assign(num_layers, 0);
        }
        return c.release();
    } catch (const std::bad_alloc&) {
        fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory for " + std::to_string(bytes) + " bytes");
        return nullptr;
    }
}

}  // namespace
}  // namespace tq::detail

using namespace tq::detail;

extern "C" {

fa_tq_cache* fa_tq_cache_new(const fa_tq_state* state, int num_layers, int num_heads, int max_seq_len) {
    return new_cache("fa_tq_cache_new", state, num_layers, num_heads, max_seq_len, false);
}

fa_tq_cache* fa_tq_cache_new_ring(const fa_tq_state* state, int num_layers, int num_heads, int max_seq_len) {
    return new_cache("fa_tq_cache_new_ring", state, num_layers, num_heads, max_seq_len, true);
}

void fa_tq_cache_free(fa_tq_cache* cache) { delete cache; }

int fa_tq_cache_clear(fa_tq_cache* cache) {
    if (int rc = check_not_null("fa_tq_cache_clear", cache, "cache")) return rc;
    std::fill(cache->keys.length.begin(), cache->keys.length.end(), 0);
    std::fill(cache->values.length.begin(), cache->values.length.end(), 0);
    return FA_TQ_OK;
}

int fa_tq_cache_seq_len(const fa_tq_cache* cache) {
    if (check_not_null("fa_tq_cache_seq_len", cache, "cache")) return -1;
    int n = std::numeric_limits<int>::max();
    for (int l = 0; l < cache->num_layers; ++l) n = std::min({n, cache->keys.length[l], cache->values.length[l]});
    return n;
}

int fa_tq_quantize(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, const float* vec, bool is_key) {
    constexpr const char* fn = "fa_tq_quantize";
    if (int rc = check_pair(fn, state, cache)) return rc;
    if (int rc = check_layer(fn, cache, layer)) return rc;
    if (int rc = check_not_null(fn, vec, "vec")) return rc;
    if (int rc = check_write_pos(fn, cache, layer, pos, is_key)) return rc;
    thread_local std::vector<std::uint8_t> codes;
    thread_local std::vector<float> scales;
    if (int rc = encode_token(fn, state, cache, vec, is_key, codes, scales)) return rc;
    commit_token(cache, layer, pos, is_key, codes, scales);
    return FA_TQ_OK;
}

float* fa_tq_dequantize(const fa_tq_state* state, const fa_tq_cache* cache, int layer, int start, int count,
                        bool is_key, float* out) {
    constexpr const char* fn = "fa_tq_dequantize";
    if (check_pair(fn, state, cache) || check_layer(fn, cache, layer) || check_not_null(fn, out, "out")) return nullptr;
    const fa_tq_stream& s = cache->stream(is_key);
    const int length = s.length[layer];
    const int oldest = cache->ring ? std::max(0, length - cache->max_seq_len) : 0;
    if (count < 0 || start < oldest || start > length - count) {
        fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": positions [" + std::to_string(start) + ", " +
                                            std::to_string(std::int64_t(start) + count) + ") are not within the " +
                                            std::to_string(oldest) + ".." + std::to_string(length) +
                                            " written in layer " + std::to_string(layer));
        return nullptr;
    }
    const tq_bit_kernels& k = is_key ? *state->kernels->key : *state->kernels->value;
    const int d = state->head_dim;
    for (int t = 0; t < count; ++t)
        for (int h = 0; h < cache->num_heads; ++h) {
            const std::size_t i = cache->stream_index(layer, h) + cache->slot(start + t);
            k.decode(state->signs.data(), &s.codes[i * s.code_bytes], s.scales[i],
                     out + (std::size_t(t) * cache->num_heads + h) * d);
        }
    return out;
}

int fa_tq_cache_evict(fa_tq_cache* cache, int n) {
    constexpr const char* fn = "fa_tq_cache_evict";
    if (int rc = check_not_null(fn, cache, "cache")) return rc;
    if (cache->ring)
        return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": a ring cache drops old positions by wrapping");
    const int shortest = fa_tq_cache_seq_len(cache);
    if (n < 0 || n > shortest)
        return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": n must be in [0, " + std::to_string(shortest) +
                                                   "] (positions held by every layer), got " + std::to_string(n));
    for (bool is_key : {true, false}) {
        fa_tq_stream& s = cache->stream(is_key);
        for (int l = 0; l < cache->num_layers; ++l) {
            const std::size_t keep = static_cast<std::size_t>(s.length[l] - n);
            for (int h = 0; h < cache->num_heads; ++h) {
                const std::size_t base = cache->stream_index(l, h);
                std::memmove(&s.codes[base * s.code_bytes], &s.codes[(base + n) * s.code_bytes], keep * s.code_bytes);
                std::memmove(&s.scales[base], &s.scales[base + n], keep * sizeof(float));
            }
            s.length[l] -= n;
        }
    }
    return FA_TQ_OK;
}

int fa_tq_cache_bytes(const fa_tq_cache* cache, size_t* per_token, size_t* total) {
    if (int rc = check_not_null("fa_tq_cache_bytes", cache, "cache")) return rc;
    const std::size_t token = std::size_t(cache->num_layers) * cache->num_heads *
                              (cache->keys.code_bytes + sizeof(float) + cache->values.code_bytes + sizeof(float));
    if (per_token) *per_token = token;
    if (total)
        *total = sizeof(fa_tq_cache) + token * cache->max_seq_len +
                 2 * sizeof(int) * static_cast<std::size_t>(cache->num_layers);
    return FA_TQ_OK;
}

}  // extern "C"
