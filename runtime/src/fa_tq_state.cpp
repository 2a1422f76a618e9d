// fa_tq_config_default, fa_tq_init, fa_tq_free, fa_tq_last_error.
#include "fa_tq_checks.hpp"
#include "last_error.hpp"
#include "turboquant/registry.h"

#include <new>
#include <string>

namespace {
// Chosen by measurement (docs/scale.md): lower MSE and higher attention fidelity.
constexpr int kDefaultScaleKind = TQ_SCALE_LEAST_SQUARES;
}  // namespace

extern "C" {

fa_tq_config fa_tq_config_default(void) { return fa_tq_config{4, 2, FA_TQ_SCALE_DEFAULT}; }

fa_tq_state* fa_tq_init(int head_dim, fa_tq_config config, uint64_t seed) {
    using tq::detail::fail;
    int scale_kind = kDefaultScaleKind;
    switch (config.scale) {
        case FA_TQ_SCALE_DEFAULT: break;
        case FA_TQ_SCALE_NORM: scale_kind = TQ_SCALE_NORM; break;
        case FA_TQ_SCALE_LEAST_SQUARES: scale_kind = TQ_SCALE_LEAST_SQUARES; break;
        default:
            fail(TQ_ERROR_INVALID_ARGUMENT, "fa_tq_init: config.scale " + std::to_string(int(config.scale)) +
                                                " is not an fa_tq_scale (0 default, 1 norm, 2 least squares)");
            return nullptr;
    }
    const tq_kernels* kernels = nullptr;
    if (tq_find(head_dim, config.key_bits, config.value_bits, &kernels) != TQ_OK) {
        fail(TQ_ERROR_UNSUPPORTED, std::string("fa_tq_init: ") + tq_last_error());
        return nullptr;
    }
    try {
        auto* state = new fa_tq_state{head_dim, kernels->key->rate_eighths, kernels->value->rate_eighths, scale_kind,
                                      seed, kernels,
                                      std::vector<float>(head_dim)};
        tq_rotation_signs(head_dim, seed, state->signs.data());
        return state;
    } catch (const std::bad_alloc&) {
        fail(TQ_ERROR_OUT_OF_MEMORY, "fa_tq_init: out of memory");
        return nullptr;
    }
}

void fa_tq_free(fa_tq_state* state) { delete state; }

const char* fa_tq_last_error(void) { return tq_last_error(); }

}  // extern "C"
