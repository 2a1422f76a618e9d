// The transformer, in FP32, for the two families tq-llama runs:
//  - llama (SmolLM2): RMSNorm, RoPE on adjacent pairs (how GGUF stores llama's Q and K),
//    grouped-query attention through a KvCache, SwiGLU;
//  - gemma3 (gemma3.cpp reads its metadata): the same pipeline with the embedding scaled
//    by sqrt(dim), RMSNorm on each head of q and k before RoPE, RoPE on halves (NeoX),
//    norms after attention and after the FFN as well as before, GeGLU, and per layer a
//    RoPE base and a sliding window (5 local layers, then a global one).
// The output head is tied to the token embedding when the file has no output.weight.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gguf.hpp"
#include "kv_cache.hpp"
#include "thread_pool.hpp"

namespace llama {

struct LayerConfig {
    float rope_base;
    int window;  // attend to the last `window` positions, this one included (0: all)
};

struct ModelConfig {
    std::string arch;
    int layers, dim, heads, kv_heads, head_dim, ffn, vocab, context;
    float norm_eps;
    float embed_scale = 1;    // the token embedding is multiplied by this on input
    bool rope_neox = false;   // RoPE rotates (i, i + d/2), not (2i, 2i + 1)
    bool qk_norm = false;     // RMSNorm on each head of q and k (attn_{q,k}_norm.weight) before RoPE
    bool post_norms = false;  // RMSNorm on the attention's and the FFN's outputs before the residual adds
    bool gelu = false;        // GeGLU (GELU, tanh approximation, on the gate), not SwiGLU
    std::vector<LayerConfig> layer;
};

// An architecture's metadata as a ModelConfig (vocab is set from the embedding later).
// The metadata every architecture has, under its own prefix ("llama.block_count", ...).
ModelConfig common_config(const GgufFile& file, const std::string& arch);  // model.cpp
ModelConfig llama_config(const GgufFile& file);   // model.cpp
ModelConfig gemma3_config(const GgufFile& file);  // gemma3.cpp

class Model {
public:
    explicit Model(const GgufFile& file);  // dequantizes every weight; throws on a model it cannot run
    const ModelConfig& config() const { return config_; }
    CacheShape cache_shape(int max_positions) const;

    // Runs tokens at positions pos, pos+1, ... (the cache holds 0..pos-1) and returns the
    // logits of the last `logit_rows` of them, row by row (logit_rows × vocab).
    std::vector<float> forward(ThreadPool& pool, std::span<const std::int32_t> tokens, int pos, KvCache& cache,
                               int logit_rows) const;
    // The same in two steps, for many rows over a large vocabulary: the final-normed
    // hidden states of every token (tokens × dim), then the logits of `rows` of them.
    std::vector<float> hidden(ThreadPool& pool, std::span<const std::int32_t> tokens, int pos, KvCache& cache) const;
    void logits(ThreadPool& pool, const float* hidden, int rows, float* out) const;

private:
    struct Layer {
        std::vector<float> attn_norm, wq, wk, wv, wo, q_norm, k_norm, post_attn_norm;
        std::vector<float> ffn_norm, gate, up, down, post_ffn_norm;
    };
    ModelConfig config_;
    std::vector<float> embedding_, output_norm_, output_;  // output_ empty when tied
    std::vector<Layer> layers_;
};

}  // namespace llama
