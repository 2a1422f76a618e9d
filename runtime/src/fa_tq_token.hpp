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
    bool opens_block = false;          // this token opens a block: its data follows
    std::vector<std::uint16_t> mean;   // [head][d], when centered
    std::vector<std::uint16_t> smooth; // [head][d], when smoothed
    std::vector<float> encoded;        // scratch: (vec - mean) / smooth
    std::vector<double> stats;         // scratch: channel energies
};

// What a block stores (half floats, [head][d]); nullptr where the stream does not use it.
struct BlockData {
    const std::uint16_t* mean = nullptr;
    const std::uint16_t* smooth = nullptr;
};

inline bool has_blocks(const fa_tq_stream& s) { return s.centered || s.smoothed; }

// The block data position pos of a stream was encoded with, or {} when the stream
// has none, pos is a sink, or pos opens a block not stored yet.
BlockData stored_block(const fa_tq_cache* cache, const fa_tq_layer& layer, const fa_tq_stream& s, long pos);

// Encodes vec[num_heads * head_dim] for `layer` at `pos` into token; touches no cache state.
int encode_token(const char* fn, const fa_tq_state* state, const fa_tq_cache* cache, int layer, int pos,
                 const float* vec, bool is_key, EncodedToken& token);

// Stores an encoded token (and vec, for sinks and the running mean) at `pos`,
// extending the layer's length and dropping means no position uses any more.
void commit_token(fa_tq_cache* cache, int layer, int pos, bool is_key, const EncodedToken& token, const float* vec);

}  // namespace tq::detail

namespace tq::detail {
// After an eviction: drops the data of blocks no held position uses.
void drop_evicted_blocks(fa_tq_cache* cache);
}  // namespace tq::detail
