#include "fa_tq_checks.hpp"

#include "last_error.hpp"
#include "rate_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

namespace tq::detail {

int check_state(const char* fn, const fa_tq_state* state) {
    if (!state) return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": state is NULL");
    return FA_TQ_OK;
}

int check_layer_state(const char* fn, const fa_tq_state* state, const fa_tq_cache* cache, int layer) {
    if (int rc = check_state(fn, state)) return rc;
    if (!cache) return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": cache is NULL");
    if (layer < 0 || layer >= cache->num_layers)
        return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": layer " + std::to_string(layer) +
                                                   " out of range [0, " + std::to_string(cache->num_layers) + ")");
    const fa_tq_layer& l = cache->layers[std::size_t(layer)];
    if (l.head_dim != state->head_dim || l.key_eighths != state->key_eighths ||
        l.value_eighths != state->value_eighths || l.seed != state->seed || l.scale_kind != state->scale_kind ||
        !(l.levers == state->levers))
        return fail(TQ_ERROR_INVALID_ARGUMENT,
                    std::string(fn) + ": layer " + std::to_string(layer) +
                        " of the cache was made by another quantizer (head_dim " + std::to_string(l.head_dim) +
                        ", K" + rate_text(l.key_eighths) + "/V" + rate_text(l.value_eighths) +
                        ") than this state (head_dim " + std::to_string(state->head_dim) + ", K" +
                        rate_text(state->key_eighths) + "/V" + rate_text(state->value_eighths) +
                        ", or a different seed, scale or lever)");
    return FA_TQ_OK;
}

int check_not_null(const char* fn, const void* p, const char* name) {
    if (!p) return fail(TQ_ERROR_INVALID_ARGUMENT, std::string(fn) + ": " + name + " is NULL");
    return FA_TQ_OK;
}

int check_write_pos(const char* fn, const fa_tq_cache* cache, int layer, int pos, bool is_key) {
    const fa_tq_stream& s = cache->layers[std::size_t(layer)].stream(is_key);
    const int length = s.length, oldest = cache->oldest(s);
    const int limit = cache->ring ? length : std::min(length, cache->max_seq_len - 1);
    if (pos < oldest || pos > limit || pos == std::numeric_limits<int>::max())
        return fail(TQ_ERROR_INVALID_ARGUMENT,
                    std::string(fn) + ": pos " + std::to_string(pos) + " out of range for layer " +
                        std::to_string(layer) + (is_key ? " keys" : " values") + ": it holds " +
                        std::to_string(length) + " positions, so pos must be in [" + std::to_string(oldest) + ", " +
                        std::to_string(limit) + "]" +
                        (cache->ring ? "" : " (max_seq_len " + std::to_string(cache->max_seq_len) + ")"));
    return FA_TQ_OK;
}

int check_finite(const char* fn, const float* x, std::size_t n, const char* name) {
    // First one pass without an early exit, which vectorizes: NaN and Inf are the floats
    // whose exponent bits are all ones.  Only a failing input is searched for its index.
    std::uint32_t nonfinite = 0;
    for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t bits;
        std::memcpy(&bits, &x[i], sizeof bits);
        nonfinite |= std::uint32_t((bits & 0x7F800000u) == 0x7F800000u);
    }
    if (!nonfinite) return FA_TQ_OK;
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(x[i]))
            return fail(TQ_ERROR_NONFINITE, std::string(fn) + ": " + name + "[" + std::to_string(i) + "] is " +
                                                (std::isnan(x[i]) ? "NaN" : "infinite"));
    return FA_TQ_OK;
}

}  // namespace tq::detail
