// A llama-architecture transformer in FP32: RMSNorm, RoPE on adjacent pairs (how
// GGUF stores llama's Q and K), grouped-query attention through a KvCache, SwiGLU,
// and an output head tied to the token embedding when the file has no output.weight.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gguf.hpp"
#include "kv_cache.hpp"
#include "thread_pool.hpp"

namespace llama {

struct ModelConfig {
    int layers, dim, heads, kv_heads, head_dim, ffn, vocab, context;
    float rope_base, norm_eps;
};

class Model {
public:
    explicit Model(const GgufFile& file);  // dequantizes every weight; throws on a model it cannot run
    const ModelConfig& config() const { return config_; }
    CacheShape cache_shape(int max_positions) const {
        return {config_.layers, config_.kv_heads, config_.head_dim, max_positions};
    }

    // Runs tokens at positions pos, pos+1, ... (the cache holds 0..pos-1) and returns the
    // logits of the last `logit_rows` of them, row by row (logit_rows × vocab).
    std::vector<float> forward(ThreadPool& pool, std::span<const std::int32_t> tokens, int pos, KvCache& cache,
                               int logit_rows) const;

private:
    struct Layer {
        std::vector<float> attn_norm, wq, wk, wv, wo, ffn_norm, gate, up, down;
    };
    ModelConfig config_;
    std::vector<float> embedding_, output_norm_, output_;  // output_ empty when tied
    std::vector<Layer> layers_;
};

}  // namespace llama
