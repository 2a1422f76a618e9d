// fa_tq_config_default, fa_tq_init, fa_tq_free, fa_tq_last_error.
#include "fa_tq_checks.hpp"
#include "last_error.hpp"
#include "rate_text.hpp"
#include "turboquant/registry.h"

#include <cstring>
#include <new>
#include <string>

namespace {
// Chosen by measurement (docs/scale.md): lower MSE and higher attention fidelity.
constexpr int kDefaultScaleKind = TQ_SCALE_LEAST_SQUARES;
// Keys need more bits than values (keys route attention, value errors average out).
constexpr float kDefaultKeyBits = 4, kDefaultValueBits = 2;
// Chosen by measurement on two model families (docs/levers.md).
constexpr fa_tq_center kDefaultCenter = FA_TQ_CENTER_KEYS;
constexpr int kDefaultCenterBlock = 128;
constexpr int kDefaultSinks = 1;
constexpr fa_tq_smooth kDefaultSmooth = FA_TQ_SMOOTH_KEYS;
// Float until the integer path's end-to-end sweep (docs/kernels.md) picks it.
constexpr fa_tq_score kDefaultScore = FA_TQ_SCORE_FLOAT;
constexpr fa_tq_value_sum kDefaultValueSum = FA_TQ_VALUE_SUM_FLOAT;
constexpr int kMaxSinks = 64, kMaxCenterBlock = 65536;

// The int a C caller stored in an enum field, read as bytes: a value outside the
// enumerators, loaded through the C++ enum type, would be undefined behaviour.
template <class Enum>
int raw(const Enum& e) {
    static_assert(sizeof(Enum) == sizeof(int));
    int v;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

// The levers of a config, defaults filled in; false (with a message) if a field is invalid.
bool resolve_levers(const fa_tq_config& c, fa_tq_levers& out) {
    using tq::detail::fail;
    const auto bad = [](const std::string& what) {
        fail(TQ_ERROR_INVALID_ARGUMENT, "fa_tq_init: config." + what);
        return false;
    };
    switch (raw(c.scale_format)) {
        case FA_TQ_SCALE_FORMAT_DEFAULT:
        case FA_TQ_SCALE_FORMAT_F16: out.f16_scales = true; break;
        case FA_TQ_SCALE_FORMAT_F32: out.f16_scales = false; break;
        default:
            return bad("scale_format " + std::to_string(raw(c.scale_format)) +
                       " is not an fa_tq_scale_format (0 default, 1 half, 2 float)");
    }
    const int center = raw(c.center) == FA_TQ_CENTER_DEFAULT ? kDefaultCenter : raw(c.center);
    if (center < FA_TQ_CENTER_NONE || center > FA_TQ_CENTER_BOTH)
        return bad("center " + std::to_string(raw(c.center)) +
                   " is not an fa_tq_center (0 default, 1 none, 2 keys, 3 values, 4 both)");
    out.center_keys = center == FA_TQ_CENTER_KEYS || center == FA_TQ_CENTER_BOTH;
    out.center_values = center == FA_TQ_CENTER_VALUES || center == FA_TQ_CENTER_BOTH;
    out.center_block = c.center_block == 0 ? kDefaultCenterBlock : c.center_block;
    if (out.center_block < 1 || out.center_block > kMaxCenterBlock || (out.center_block & (out.center_block - 1)))
        return bad("center_block " + std::to_string(c.center_block) + " is not 0 or a power of two in [1, 65536]");
    const int sinks = c.sinks == 0 ? kDefaultSinks : c.sinks;
    if (sinks != FA_TQ_NO_SINKS && (sinks < 1 || sinks > kMaxSinks))
        return bad("sinks " + std::to_string(c.sinks) + " is not 0 (default), -1 (none) or in [1, 64]");
    out.sinks = sinks == FA_TQ_NO_SINKS ? 0 : sinks;
    const int smooth = raw(c.smooth) == FA_TQ_SMOOTH_DEFAULT ? kDefaultSmooth : raw(c.smooth);
    if (smooth != FA_TQ_SMOOTH_NONE && smooth != FA_TQ_SMOOTH_KEYS)
        return bad("smooth " + std::to_string(raw(c.smooth)) + " is not an fa_tq_smooth (0 default, 1 none, 2 keys)");
    out.smooth_keys = smooth == FA_TQ_SMOOTH_KEYS;
    return true;
}

// The kernel an arithmetic field of the config asks for (config.score, .value_sum: 0
// default, 1 float, 2 int8, the same numbers in both enums), or null (with a message).
static_assert(FA_TQ_SCORE_FLOAT == 1 && FA_TQ_SCORE_INT8 == 2 && FA_TQ_VALUE_SUM_FLOAT == 1 &&
              FA_TQ_VALUE_SUM_INT8 == 2);
template <class Kernel>
Kernel resolve_arithmetic(int asked, int fallback, Kernel float_kernel, Kernel int_kernel, int rate_eighths,
                          const char* field, const char* type, const char* role, const char* letter) {
    using tq::detail::fail;
    switch (asked == 0 ? fallback : asked) {
        case 1: return float_kernel;
        case 2:
            if (int_kernel) return int_kernel;
            // Only the value sum lacks one (above 5 bits); every key rate has an integer score.
            fail(TQ_ERROR_UNSUPPORTED, std::string("fa_tq_init: config.") + field + " int8 needs " + role +
                                           " codebooks of at most 32 levels; " + letter +
                                           tq::detail::rate_text(rate_eighths) + " has more (" + role +
                                           " bits <= 5 have an integer path)");
            return nullptr;
        default:
            fail(TQ_ERROR_INVALID_ARGUMENT, std::string("fa_tq_init: config.") + field + " " + std::to_string(asked) +
                                                " is not an " + type + " (0 default, 1 float, 2 int8)");
            return nullptr;
    }
}

tq_score_fn resolve_score(const fa_tq_config& c, const tq_bit_kernels& key) {
    return resolve_arithmetic(raw(c.score), kDefaultScore, key.score, key.score_int, key.rate_eighths, "score",
                              "fa_tq_score", "key", "K");
}

tq_accumulate_fn resolve_value_sum(const fa_tq_config& c, const tq_bit_kernels& value) {
    return resolve_arithmetic(raw(c.value_sum), kDefaultValueSum, value.accumulate, value.accumulate_int,
                              value.rate_eighths, "value_sum", "fa_tq_value_sum", "value", "V");
}
}  // namespace

extern "C" {

fa_tq_config fa_tq_config_default(void) {
    return fa_tq_config{kDefaultKeyBits, kDefaultValueBits, FA_TQ_SCALE_LEAST_SQUARES, FA_TQ_SCALE_FORMAT_F16, kDefaultCenter, kDefaultCenterBlock,
                        kDefaultSinks,   kDefaultSmooth, kDefaultScore, kDefaultValueSum};
}

fa_tq_state* fa_tq_init(int head_dim, fa_tq_config config, uint64_t seed) {
    using tq::detail::fail;
    constexpr const char* fn = "fa_tq_init";
    return tq::detail::guard(fn, static_cast<fa_tq_state*>(nullptr), [&]() -> fa_tq_state* {
        int scale_kind = kDefaultScaleKind;
        switch (raw(config.scale)) {
            case FA_TQ_SCALE_DEFAULT: break;
            case FA_TQ_SCALE_NORM: scale_kind = TQ_SCALE_NORM; break;
            case FA_TQ_SCALE_LEAST_SQUARES: scale_kind = TQ_SCALE_LEAST_SQUARES; break;
            default:
                fail(TQ_ERROR_INVALID_ARGUMENT, "fa_tq_init: config.scale " + std::to_string(raw(config.scale)) +
                                                    " is not an fa_tq_scale (0 default, 1 norm, 2 least squares)");
                return nullptr;
        }
        fa_tq_levers levers{};
        if (!resolve_levers(config, levers)) return nullptr;
        const tq_kernels* kernels = nullptr;
        const float key_bits = config.key_bits == 0 ? kDefaultKeyBits : config.key_bits;
        const float value_bits = config.value_bits == 0 ? kDefaultValueBits : config.value_bits;
        if (tq_find(head_dim, key_bits, value_bits, &kernels) != TQ_OK) {
            // tq_find's message, its name replaced by ours: one prefix
            const std::string why = tq_last_error(), own = "tq_find: ";
            fail(TQ_ERROR_UNSUPPORTED, "fa_tq_init: " + (why.rfind(own, 0) == 0 ? why.substr(own.size()) : why));
            return nullptr;
        }
        const tq_score_fn score = resolve_score(config, *kernels->key);
        if (!score) return nullptr;
        const tq_accumulate_fn value_sum = resolve_value_sum(config, *kernels->value);
        if (!value_sum) return nullptr;
        auto* state = new fa_tq_state{head_dim, kernels->key->rate_eighths, kernels->value->rate_eighths, scale_kind,
                                      seed, levers, kernels,
                                      std::vector<float>(head_dim), score, value_sum};
        tq_rotation_signs(head_dim, seed, state->signs.data());
        return state;
    });
}

void fa_tq_free(fa_tq_state* state) { delete state; }

const char* fa_tq_last_error(void) { return tq_last_error(); }

}  // extern "C"
