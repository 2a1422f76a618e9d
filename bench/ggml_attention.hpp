// The peer of tq-attention-bench: llama.cpp's CPU flash attention
// (ggml_flash_attn_ext) over its own F16, Q8_0 and Q4_0 K/V in the graph llama.cpp
// builds, with ggml from the pinned llama.cpp sources (scripts/setup-llamacpp.sh)
// built as llama.cpp builds it by default.  Compiled only when bench/CMakeLists.txt
// finds those sources.
#pragma once

#include <memory>

namespace tq::bench {

enum class GgmlKv { f16, q8_0, q4_0 };
const char* name(GgmlKv type);

// The ISA ggml's CPU backend was compiled for ("avx512", "avx2"), as it reports it.
const char* ggml_isa();

// One layer's attention step as llama.cpp runs it (ggml_attention.cpp): a cache of
// `n_kv` positions (kv_heads × head_dim each, stored as `type`, filled like the
// library's caches in the bench), into whose last `n_q` positions each run() writes
// the new tokens' K and V, and `n_q` query tokens, query i attending causally over
// positions 0 .. n_kv − n_q + i.  The graph, its work buffer and a ggml thread pool
// of `threads` are made once; run() computes it.
class GgmlAttention {
public:
    GgmlAttention(int q_heads, int kv_heads, int head_dim, int n_kv, int n_q, GgmlKv type, int threads);
    ~GgmlAttention();
    GgmlAttention(const GgmlAttention&) = delete;
    GgmlAttention& operator=(const GgmlAttention&) = delete;
    void run();
    const float* out() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace tq::bench
