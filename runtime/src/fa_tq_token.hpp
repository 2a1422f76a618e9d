// Writing one token into the cache in two steps, so that a failure leaves the
// cache unchanged: encode every head into scratch, then commit.
#pragma once

#include "fa_tq_internal.hpp"

#include <cstdint>
#include <vector>

namespace tq::detail {

// One token's keys or values for every KV head, encoded but not yet stored.
struct EncodedToken {
    std::vector<std::uint8_t> codes;   // [head][code_bytes]
    std::vector<float> scales;         // [head], as stored (already rounded to half if the cache keeps halves)
    std::vector<std::uint16_t> mean;   // [head][d]: a new block's mean, when this token opens one
    std::vector<float> centered;       // scratch: vec minus its mean
};

// The mean (half floats, [head][d]) that position pos of a stream is encoded
// against, or nullptr when the stream is not centered, pos is a sink, or pos
// opens a block whose mean is not stored yet (then it is token.mean after encode).
const std::uint16_t* stored_mean(const fa_tq_cache* cache, const fa_tq_layer& layer, const fa_tq_stream& s, long pos);

// Encodes vec[num_heads * head_dim] for `layer` at `pos` into token; touches no cache state.
int encode_token(const char* fn, const fa_tq_state* state, const fa_tq_cache* cache, int layer, int pos,
                 const float* vec, bool is_key, EncodedToken& token);

// Stores an encoded token (and vec, for sinks and the running mean) at `pos`,
// extending the layer's length and dropping means no position uses any more.
void commit_token(fa_tq_cache* cache, int layer, int pos, bool is_key, const EncodedToken& token, const float* vec);

}  // namespace tq::detail

namespace tq::detail {
// After an eviction: drops the means of blocks no held position uses.
void drop_evicted_means(fa_tq_cache* cache);
}  // namespace tq::detail
