// The baselines each benchmark figure is a ratio against, compiled once per ISA
// with that ISA's flags (baselines_isa.cpp), so a kernel races code built as it is.
#pragma once

#include <cstddef>
#include <string_view>

namespace tq::baselines {

struct Baselines {
    // The spec's "Hadamard Transform Detail": signs, the naive fwht loop, 1/sqrt(d).
    void (*naive_rotate)(const float* signs, const float* x, float* out, int d);
    // Sum of n floats read once (a streaming read, for memory bandwidth).
    float (*stream_sum)(const float* x, std::size_t n);
    // out[t] = <q, keys[t]> for n uncompressed keys of d floats.
    void (*fp32_dots)(const float* q, const float* keys, std::size_t n, int d, float* out);
    // FP32 decode attention (reference/fp32_attention.hpp).
    void (*fp32_attention)(const float* q, int n_q_heads, const float* keys, const float* values, std::size_t n,
                           int num_kv_heads, int head_dim, float scale, float* scores, float* out);
};

// The baselines compiled with `isa`'s flags (an ISA of this build; scalar for any other).
const Baselines& for_isa(std::string_view isa);

}  // namespace tq::baselines
