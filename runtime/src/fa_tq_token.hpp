// Writing one token into the cache in two steps, so that a failure leaves the
// cache unchanged: encode every head into scratch, then commit.
#pragma once

#include "fa_tq_internal.hpp"

#include <cstdint>
#include <vector>

namespace tq::detail {

// Encodes vec[num_heads * head_dim] into (codes, scales); touches no cache state.
int encode_token(const char* fn, const fa_tq_state* state, const fa_tq_cache* cache, const float* vec, bool is_key,
                 std::vector<std::uint8_t>& codes, std::vector<float>& scales);

// Copies an encoded token into `layer` at `pos` and extends the layer's length.
void commit_token(fa_tq_cache* cache, int layer, int pos, bool is_key, const std::vector<std::uint8_t>& codes,
                  const std::vector<float>& scales);

}  // namespace tq::detail
