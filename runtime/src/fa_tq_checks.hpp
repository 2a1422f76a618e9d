// Argument validation shared by the fa_tq_* entry points.  Each check returns
// FA_TQ_OK or records a message naming the function and returns the error code.
#pragma once

#include "fa_tq_internal.hpp"

namespace tq::detail {

int check_state(const char* fn, const fa_tq_state* state);
// state and cache exist, layer is in range, and that layer was made for this
// state's head_dim, bits, seed, scale and levers.
int check_layer_state(const char* fn, const fa_tq_state* state, const fa_tq_cache* cache, int layer);
int check_not_null(const char* fn, const void* p, const char* name);
// pos may overwrite a written position still in the window, or append the next one.
int check_write_pos(const char* fn, const fa_tq_cache* cache, int layer, int pos, bool is_key);
int check_finite(const char* fn, const float* x, std::size_t n, const char* name);

}  // namespace tq::detail
