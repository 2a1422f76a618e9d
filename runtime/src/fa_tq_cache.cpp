// The compressed cache: lifetime, quantize, dequantize, eviction, byte accounting.
#include "fa_tq_blocks.hpp"
#include "fa_tq_checks.hpp"
#include "fa_tq_token.hpp"
#include "half_float.hpp"
#include "last_error.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <tuple>

namespace tq::detail {
namespace {

// Blocks that positions within one window of max_seq_len can touch (fa_tq_blocks.hpp).
std::size_t max_blocks(const fa_tq_levers& lv, int max_seq_len) {
    return std::size_t(std::countr_zero(unsigned(lv.center_block))) + 3 + std::size_t(max_seq_len) / lv.center_block;
}

// Bytes one layer takes for max_seq_len positions, or 0 if that overflows size_t.
std::size_t layer_bytes(const fa_tq_state* st, int num_heads, int max_seq_len) {
    const fa_tq_levers& lv = st->levers;
    const std::size_t scale = lv.f16_scales ? 2 : 4, d = std::size_t(st->head_dim);
    const std::size_t per_slot = st->kernels->key->code_bytes + st->kernels->value->code_bytes + 2 * scale;
    const std::size_t fixed = 2 * (max_blocks(lv, max_seq_len) * d * 4 + d * 16 + std::size_t(lv.sinks) * d * 4);
    std::size_t slots = 0, bytes = 0;
    if (__builtin_mul_overflow(std::size_t(num_heads), std::size_t(max_seq_len), &slots) ||
        __builtin_mul_overflow(slots, per_slot, &bytes) || __builtin_mul_overflow(std::size_t(num_heads), fixed, &slots) ||
        __builtin_add_overflow(bytes, slots, &bytes))
        return 0;
    return bytes;
}

void init_stream(fa_tq_stream& s, const fa_tq_state* st, bool is_key, int heads, int max_seq_len) {
    const fa_tq_levers& lv = st->levers;
    const std::size_t slots = std::size_t(heads) * max_seq_len, d = std::size_t(st->head_dim);
    s.code_bytes = (is_key ? st->kernels->key : st->kernels->value)->code_bytes;
    s.centered = is_key ? lv.center_keys : lv.center_values;
    s.smoothed = is_key && lv.smooth_keys;
    s.codes.assign(slots * s.code_bytes, 0);
    if (lv.f16_scales)  // the other stays empty
        s.scales16.assign(slots, 0);
    else
        s.scales32.assign(slots, 0.0f);
    s.sink_vectors.assign(std::size_t(heads) * lv.sinks * d, 0.0f);
    const std::size_t block_floats = max_blocks(lv, max_seq_len) * heads * d;
    if (s.centered || s.smoothed) {  // the running mean and energies (fa_tq_statistics.hpp)
        s.sum.assign(heads * d, 0.0);
        s.sum_sq.assign(heads * d, 0.0);
    }
    if (s.centered) s.means.reserve(block_floats);
    if (s.smoothed) s.smooth.reserve(block_floats);
}

// A stream's per-slot arrays and block records re-laid for new_cap slots per head:
// each head's written slots (a linear cache: slot = position) where new_cap puts them.
struct Restrided {
    decltype(fa_tq_stream::codes) codes;
    decltype(fa_tq_stream::scales32) scales32;
    decltype(fa_tq_stream::scales16) scales16;
    std::vector<std::uint16_t> means, smooth;
};

// False if the sizes overflow; throws std::bad_alloc (the cache untouched).
bool restride(const fa_tq_stream& src, const fa_tq_layer& lay, int heads, int old_cap, int new_cap, Restrided& out) {
    std::size_t slots = 0, code_total = 0;
    if (__builtin_mul_overflow(std::size_t(heads), std::size_t(new_cap), &slots) ||
        __builtin_mul_overflow(slots, src.code_bytes, &code_total))
        return false;
    const std::size_t held = std::size_t(src.length);
    out.codes.assign(code_total, 0);
    for (int h = 0; h < heads; ++h)
        std::memcpy(out.codes.data() + std::size_t(h) * new_cap * src.code_bytes,
                    src.codes.data() + std::size_t(h) * old_cap * src.code_bytes, held * src.code_bytes);
    auto move_scales = [&](auto& to, const auto& from) {
        if (from.empty()) return;
        to.assign(slots, 0);
        for (int h = 0; h < heads; ++h)
            std::copy_n(from.begin() + std::ptrdiff_t(std::size_t(h) * old_cap), held,
                        to.begin() + std::ptrdiff_t(std::size_t(h) * new_cap));
    };
    move_scales(out.scales16, src.scales16);
    move_scales(out.scales32, src.scales32);
    // Block records with the capacity appends rely on (reserved for new_cap).
    const std::size_t block_floats = max_blocks(lay.levers, new_cap) * std::size_t(heads) * std::size_t(lay.head_dim);
    for (auto [to, from, used] : {std::tuple{&out.means, &src.means, src.centered},
                                  std::tuple{&out.smooth, &src.smooth, src.smoothed}}) {
        if (!used) continue;
        to->reserve(std::max(block_floats, from->size()));
        to->assign(from->begin(), from->end());
    }
    return true;
}

// The cache of num_layers layers, layer l quantized by states[uniform ? 0 : l]; sizes
// are checked before anything is allocated.
fa_tq_cache* new_cache(const char* fn, const fa_tq_state* const* states, bool uniform, int num_layers, int num_heads,
                       int max_seq_len, bool ring) {
    auto bad = [&](const char* name, int v) {
        fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + name + " must be positive, got " + std::to_string(v));
        return nullptr;
    };
    if (num_layers <= 0) return bad("num_layers", num_layers);
    if (num_heads <= 0) return bad("num_heads", num_heads);
    if (max_seq_len <= 0) return bad("max_seq_len", max_seq_len);
    const auto state_of = [&](int l) { return states[uniform ? 0 : l]; };
    std::size_t bytes = 0;
    for (int l = 0; l < (uniform ? 1 : num_layers); ++l) {
        const fa_tq_state* st = state_of(l);
        if (check_state(fn, st)) return nullptr;
        if (st->head_dim != states[0]->head_dim) {
            fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": layer " + std::to_string(l) + "'s head_dim " +
                                                std::to_string(st->head_dim) + " differs from layer 0's " +
                                                std::to_string(states[0]->head_dim));
            return nullptr;
        }
        const std::size_t layer = layer_bytes(st, num_heads, max_seq_len);
        if (layer == 0 || __builtin_add_overflow(bytes, layer, &bytes) ||
            (uniform && __builtin_mul_overflow(bytes, std::size_t(num_layers), &bytes))) {
            fail(TQ_ERROR_INVALID_ARGUMENT,
                 std::string(fn) + ": num_layers x num_heads x max_seq_len overflows memory sizes");
            return nullptr;
        }
    }
    // No machine addresses more: 2^57 bytes is x86-64's and aarch64's largest virtual
    // address space (5-level paging); PTRDIFF_MAX bounds any allocation on 32-bit ones.
    // Refusing here, rather than failing to allocate, keeps a huge request from reaching
    // allocators that reserve address space lazily and fail only when it is touched.
    constexpr std::uint64_t kMaxBytes = sizeof(void*) >= 8 ? std::uint64_t(1) << 57
                                                           : std::uint64_t(std::numeric_limits<std::ptrdiff_t>::max());
    if (bytes > kMaxBytes) {
        fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + std::to_string(num_layers) + " layers x " +
                                            std::to_string(num_heads) + " heads x " + std::to_string(max_seq_len) +
                                            " positions need " + std::to_string(bytes) +
                                            " bytes, beyond any machine's address space");
        return nullptr;
    }
    try {
        auto c = std::make_unique<fa_tq_cache>();
        c->num_layers = num_layers;
        c->num_heads = num_heads;
        c->max_seq_len = max_seq_len;
        c->ring = ring;
        c->layers.resize(std::size_t(num_layers));
        for (int l = 0; l < num_layers; ++l) {
            const fa_tq_state* st = state_of(l);
            fa_tq_layer& lay = c->layers[std::size_t(l)];
            lay.head_dim = st->head_dim;
            lay.key_eighths = st->key_eighths;
            lay.value_eighths = st->value_eighths;
            lay.scale_kind = st->scale_kind;
            lay.seed = st->seed;
            lay.levers = st->levers;
            for (bool is_key : {true, false}) init_stream(lay.stream(is_key), st, is_key, num_heads, max_seq_len);
            if (lay.levers.smooth_keys) lay.query_sum_sq.assign(std::size_t(num_heads) * st->head_dim, 0.0);
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
    constexpr const char* fn = "fa_tq_cache_new";
    return guard(fn, static_cast<fa_tq_cache*>(nullptr),
                 [&] { return new_cache(fn, &state, true, num_layers, num_heads, max_seq_len, false); });
}

fa_tq_cache* fa_tq_cache_new_ring(const fa_tq_state* state, int num_layers, int num_heads, int max_seq_len) {
    constexpr const char* fn = "fa_tq_cache_new_ring";
    return guard(fn, static_cast<fa_tq_cache*>(nullptr),
                 [&] { return new_cache(fn, &state, true, num_layers, num_heads, max_seq_len, true); });
}

fa_tq_cache* fa_tq_cache_new_layers(const fa_tq_state* const* layer_states, int num_layers, int num_heads,
                                    int max_seq_len, bool ring) {
    constexpr const char* fn = "fa_tq_cache_new_layers";
    return guard(fn, static_cast<fa_tq_cache*>(nullptr), [&]() -> fa_tq_cache* {
        if (check_not_null(fn, layer_states, "layer_states")) return nullptr;
        return new_cache(fn, layer_states, false, num_layers, num_heads, max_seq_len, ring);
    });
}

void fa_tq_cache_free(fa_tq_cache* cache) { delete cache; }

int fa_tq_cache_clear(fa_tq_cache* cache) {
    constexpr const char* fn = "fa_tq_cache_clear";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_not_null(fn, cache, "cache")) return rc;
        cache->evicted = 0;
        for (fa_tq_layer& lay : cache->layers) {
            std::fill(lay.query_sum_sq.begin(), lay.query_sum_sq.end(), 0.0);
            lay.query_count = 0;
            for (bool is_key : {true, false}) {
                fa_tq_stream& s = lay.stream(is_key);
                s.length = s.floor = 0;
                std::fill(s.sum.begin(), s.sum.end(), 0.0);
                std::fill(s.sum_sq.begin(), s.sum_sq.end(), 0.0);
                s.count = 0;
                s.first_block = s.blocks = 0;
                s.means.clear();
                s.smooth.clear();
                std::fill(s.sink_vectors.begin(), s.sink_vectors.end(), 0.0f);  // nothing of the last sequence stays
                s.scale_bound = s.extra_bound = 0;
                s.smooth_bound = 1;
            }
        }
        return FA_TQ_OK;
    });
}

int fa_tq_cache_seq_len(const fa_tq_cache* cache) {
    constexpr const char* fn = "fa_tq_cache_seq_len";
    return guard(fn, -1, [&]() -> int {
        if (check_not_null(fn, cache, "cache")) return -1;
        int n = std::numeric_limits<int>::max();
        for (const fa_tq_layer& lay : cache->layers) n = std::min({n, lay.keys.length, lay.values.length});
        return n;
    });
}

int fa_tq_quantize(const fa_tq_state* state, fa_tq_cache* cache, int layer, int pos, const float* vec, bool is_key) {
    constexpr const char* fn = "fa_tq_quantize";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_layer_state(fn, state, cache, layer)) return rc;
        if (int rc = check_not_null(fn, vec, "vec")) return rc;
        if (int rc = check_write_pos(fn, cache, layer, pos, is_key)) return rc;
        thread_local EncodedToken token;
        if (int rc = encode_token(fn, state, cache, layer, pos, vec, is_key, token)) return rc;
        commit_token(cache, layer, pos, is_key, token, vec);
        return FA_TQ_OK;
    });
}

float* fa_tq_dequantize(const fa_tq_state* state, const fa_tq_cache* cache, int layer, int start, int count,
                        bool is_key, float* out) {
    constexpr const char* fn = "fa_tq_dequantize";
    return guard(fn, static_cast<float*>(nullptr), [&]() -> float* {
        if (check_layer_state(fn, state, cache, layer) || check_not_null(fn, out, "out")) return nullptr;
        const fa_tq_layer& lay = cache->layers[std::size_t(layer)];
        const fa_tq_stream& s = lay.stream(is_key);
        const int oldest = cache->oldest(s);
        if (count < 0 || start < oldest || start > s.length - count) {
            fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": positions [" + std::to_string(start) + ", " +
                                                std::to_string(std::int64_t(start) + count) + ") are not within the " +
                                                std::to_string(oldest) + ".." + std::to_string(s.length) +
                                                " written in layer " + std::to_string(layer));
            return nullptr;
        }
        const tq_bit_kernels& k = is_key ? *state->kernels->key : *state->kernels->value;
        const int d = state->head_dim, heads = cache->num_heads;
        for (int t = 0; t < count; ++t) {
            const long a = start + t + cache->evicted;
            const BlockData block = stored_block(cache, lay, s, start + t);
            for (int h = 0; h < heads; ++h) {
                float* o = out + (std::size_t(t) * heads + h) * d;
                if (is_sink(lay.levers, a)) {
                    std::memcpy(o, &s.sink_vectors[(std::size_t(h) * lay.levers.sinks + std::size_t(a)) * d],
                                sizeof(float) * d);
                    continue;
                }
                const std::size_t i = cache->stream_index(h) + cache->slot(start + t);
                k.decode(state->signs.data(), &s.codes[i * s.code_bytes],
                         lay.levers.f16_scales ? half_to_float(s.scales16[i]) : s.scales32[i], o);
                const std::size_t at = std::size_t(h) * d;
                if (block.smooth)
                    for (int j = 0; j < d; ++j) o[j] *= half_to_float(block.smooth[at + j]);
                if (block.mean)
                    for (int j = 0; j < d; ++j) o[j] += half_to_float(block.mean[at + j]);
            }
        }
        return out;
    });
}

int fa_tq_cache_copy(fa_tq_cache* dst, const fa_tq_cache* src) {
    constexpr const char* fn = "fa_tq_cache_copy";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_not_null(fn, dst, "dst")) return rc;
        if (int rc = check_not_null(fn, src, "src")) return rc;
        if (dst == src) return FA_TQ_OK;
        if (dst->num_layers != src->num_layers || dst->num_heads != src->num_heads ||
            dst->max_seq_len != src->max_seq_len || dst->ring != src->ring)
            return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": the caches differ in shape (layers, heads, "
                                                                      "max_seq_len or ring)");
        for (std::size_t l = 0; l < src->layers.size(); ++l) {
            const fa_tq_layer &a = dst->layers[l], &b = src->layers[l];
            if (a.head_dim != b.head_dim || a.key_eighths != b.key_eighths || a.value_eighths != b.value_eighths ||
                a.scale_kind != b.scale_kind || a.seed != b.seed || !(a.levers == b.levers))
                return fail(TQ_ERROR_INVALID_ARGUMENT,
                            std::string(fn) + ": layer " + std::to_string(l) + " has another quantizer in each cache");
        }
        // Element by element into dst's own vectors, whose capacities (reserved at
        // creation for this shape) hold src's sizes: no allocation, so nothing throws
        // half-way, and the block records keep the capacity that appends rely on.
        dst->layers = src->layers;
        dst->evicted = src->evicted;
        return FA_TQ_OK;
    });
}

int fa_tq_cache_evict(fa_tq_cache* cache, int n) {
    constexpr const char* fn = "fa_tq_cache_evict";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_not_null(fn, cache, "cache")) return rc;
        if (cache->ring)
            return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": a ring cache drops old positions by wrapping");
        const int shortest = fa_tq_cache_seq_len(cache);
        if (n < 0 || n > shortest)
            return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": n must be in [0, " + std::to_string(shortest) +
                                                       "] (positions held by every layer), got " + std::to_string(n));
        for (fa_tq_layer& lay : cache->layers)
            for (bool is_key : {true, false}) {
                fa_tq_stream& s = lay.stream(is_key);
                const std::size_t keep = static_cast<std::size_t>(s.length - n);
                const std::size_t scale_bytes = lay.levers.f16_scales ? 2 : 4;
                for (int h = 0; h < cache->num_heads; ++h) {
                    const std::size_t base = cache->stream_index(h);
                    // data() + index, not &v[index]: index may be one past the end when n == length
                    std::memmove(s.codes.data() + base * s.code_bytes, s.codes.data() + (base + n) * s.code_bytes,
                                 keep * s.code_bytes);
                    auto* scales = lay.levers.f16_scales ? static_cast<void*>(s.scales16.data())
                                                         : static_cast<void*>(s.scales32.data());
                    std::memmove(static_cast<char*>(scales) + base * scale_bytes,
                                 static_cast<char*>(scales) + (base + n) * scale_bytes, keep * scale_bytes);
                }
                s.length -= n;
            }
        cache->evicted += n;
        drop_evicted_blocks(cache);
        return FA_TQ_OK;
    });
}

int fa_tq_cache_set_window(fa_tq_cache* cache, int window) {
    constexpr const char* fn = "fa_tq_cache_set_window";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_not_null(fn, cache, "cache")) return rc;
        if (window < 0 || (cache->ring && window > cache->max_seq_len))
            return fail(TQ_ERROR_INVALID_ARGUMENT,
                        std::string(fn) + ": window must be 0 (all held) or positive" +
                            (cache->ring ? " and at most the ring's " + std::to_string(cache->max_seq_len) : "") +
                            ", got " + std::to_string(window));
        cache->window = window;
        return FA_TQ_OK;
    });
}

int fa_tq_cache_truncate(fa_tq_cache* cache, int length) {
    constexpr const char* fn = "fa_tq_cache_truncate";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_not_null(fn, cache, "cache")) return rc;
        if (length < 0)
            return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": length must be >= 0, got " + std::to_string(length));
        for (fa_tq_layer& lay : cache->layers)
            for (bool is_key : {true, false}) {
                fa_tq_stream& s = lay.stream(is_key);
                if (s.length <= length) continue;
                // A ring's slots of the removed positions held older ones: those are gone.
                if (cache->ring) s.floor = std::min(length, cache->oldest(s));
                s.length = length;
            }
        return FA_TQ_OK;
    });
}

int fa_tq_cache_oldest(const fa_tq_cache* cache) {
    constexpr const char* fn = "fa_tq_cache_oldest";
    return guard(fn, -1, [&]() -> int {
        if (check_not_null(fn, cache, "cache")) return -1;
        int oldest = 0;
        for (const fa_tq_layer& lay : cache->layers)
            oldest = std::max({oldest, cache->oldest(lay.keys), cache->oldest(lay.values)});
        return oldest;
    });
}

int fa_tq_cache_resize(fa_tq_cache* cache, int max_seq_len) {
    constexpr const char* fn = "fa_tq_cache_resize";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_not_null(fn, cache, "cache")) return rc;
        if (cache->ring) return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": a ring cache keeps its size");
        int longest = 0;
        for (const fa_tq_layer& lay : cache->layers) longest = std::max({longest, lay.keys.length, lay.values.length});
        if (max_seq_len < std::max(1, longest))
            return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": max_seq_len must be positive and hold the " +
                                                       std::to_string(longest) + " positions written, got " +
                                                       std::to_string(max_seq_len));
        if (max_seq_len == cache->max_seq_len) return FA_TQ_OK;
        // Every stream's new arrays first (the rest of the layers stays), then swapped in:
        // all or nothing.
        std::vector<Restrided> fresh(2 * cache->layers.size());
        for (std::size_t l = 0; l < cache->layers.size(); ++l)
            for (bool is_key : {true, false})
                if (!restride(cache->layers[l].stream(is_key), cache->layers[l], cache->num_heads, cache->max_seq_len,
                              max_seq_len, fresh[2 * l + (is_key ? 0 : 1)]))
                    return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + std::to_string(max_seq_len) +
                                                               " positions overflow memory sizes");
        for (std::size_t l = 0; l < cache->layers.size(); ++l)
            for (bool is_key : {true, false}) {
                fa_tq_stream& s = cache->layers[l].stream(is_key);
                Restrided& r = fresh[2 * l + (is_key ? 0 : 1)];
                s.codes.swap(r.codes);
                s.scales32.swap(r.scales32);
                s.scales16.swap(r.scales16);
                if (s.centered) s.means.swap(r.means);
                if (s.smoothed) s.smooth.swap(r.smooth);
            }
        cache->max_seq_len = max_seq_len;
        return FA_TQ_OK;
    });
}

int fa_tq_cache_bytes(const fa_tq_cache* cache, size_t* per_token, size_t* total) {
    constexpr const char* fn = "fa_tq_cache_bytes";
    return guard(fn, int(TQ_ERROR_OUT_OF_MEMORY), [&]() -> int {
        if (int rc = check_not_null(fn, cache, "cache")) return rc;
        std::size_t token = 0, fixed = sizeof(fa_tq_cache);
        for (const fa_tq_layer& lay : cache->layers) {
            const std::size_t scale = lay.levers.f16_scales ? 2 : 4;
            token += std::size_t(cache->num_heads) * (lay.keys.code_bytes + lay.values.code_bytes + 2 * scale);
            fixed += sizeof(fa_tq_layer) + lay.query_sum_sq.size() * 8;
            for (bool is_key : {true, false}) {
                const fa_tq_stream& s = lay.stream(is_key);
                fixed += (s.means.capacity() + s.smooth.capacity()) * 2 +
                         (s.sum.size() + s.sum_sq.size()) * 8 + s.sink_vectors.size() * 4;  // the streams themselves are in sizeof(fa_tq_layer)
            }
        }
        if (per_token) *per_token = token;
        if (total) *total = fixed + token * cache->max_seq_len;
        return FA_TQ_OK;
    });
}

double fa_tq_cache_bytes_per_token_all_in(const fa_tq_cache* cache) {
    constexpr const char* fn = "fa_tq_cache_bytes_per_token_all_in";
    return guard(fn, -1.0, [&]() -> double {
        size_t token = 0;
        if (fa_tq_cache_bytes(cache, &token, nullptr) != FA_TQ_OK) return -1;
        double blocks = 0;  // head_dim halves per block for each mean and each set of channel scales, amortized
        for (const fa_tq_layer& lay : cache->layers)
            blocks += double(cache->num_heads) *
                      (lay.keys.centered + lay.keys.smoothed + lay.values.centered + lay.values.smoothed) * lay.head_dim *
                      2.0 / lay.levers.center_block;
        return double(token) + blocks;
    });
}

}  // extern "C"
