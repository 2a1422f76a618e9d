// The structures behind the opaque fa_tq_state and fa_tq_cache handles.
#pragma once

#include "turboquant/turboquant.h"

#include <cstdint>
#include <vector>

struct fa_tq_state {
    int head_dim;
    int key_eighths;    // bits per coordinate, in eighths
    int value_eighths;
    int scale_kind;  // tq_scale_kind, resolved from fa_tq_config::scale
    std::uint64_t seed;
    const tq_kernels* kernels;
    std::vector<float> signs;  // ±1/sqrt(head_dim)
};

// One kind (keys or values) of the cache: per (layer, head) a stream of
// max_seq_len packed codes and one of max_seq_len scales.
struct fa_tq_stream {
    std::size_t code_bytes = 0;
    std::vector<std::uint8_t> codes;  // [layer][head][slot][code_bytes]
    std::vector<float> scales;        // [layer][head][slot]
    std::vector<int> length;          // per layer: positions written (absolute in ring mode)
};

struct fa_tq_cache {
    // The quantizer this cache belongs to; calls with another are refused.
    int head_dim, key_eighths, value_eighths, scale_kind;
    std::uint64_t seed;
    int num_layers, num_heads, max_seq_len;
    bool ring;
    fa_tq_stream keys, values;

    fa_tq_stream& stream(bool is_key) { return is_key ? keys : values; }
    const fa_tq_stream& stream(bool is_key) const { return is_key ? keys : values; }
    std::size_t stream_index(int layer, int head) const {
        return (static_cast<std::size_t>(layer) * num_heads + head) * max_seq_len;
    }
    int slot(int pos) const { return ring ? pos % max_seq_len : pos; }
};
