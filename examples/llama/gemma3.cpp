// Gemma 3's metadata (general.architecture = "gemma3") as a ModelConfig.  What differs
// from llama, as llama.cpp's gemma3 implementation and its GGUF converter have it:
//  - head dim from attention.key_length (256), not dim / heads; 1 KV head at 270M;
//  - sliding-window attention on 5 layers of every 6: layer l is global when
//    l % 6 == 5, local otherwise; a local layer attends to the last
//    attention.sliding_window positions (the query's own included: llama.cpp masks a
//    key at p0 for a query at p1 when p1 - p0 >= window);
//  - RoPE base rope.freq_base (1e6) on global layers, 10000 on local ones (llama.cpp
//    fixes it; the GGUF has no key for it); NeoX layout (halves) for every Gemma;
//  - attention scale 1/sqrt(query_pre_attn_scalar) = 1/sqrt(256) = 1/sqrt(head dim) for
//    every Gemma 3 but the 27B, which is what both KV caches use;
//  - embedding × sqrt(dim) on input; QK-norm; pre- and post-norms; GeGLU (tanh GELU);
//  - the norm weights are used as stored: the converter has added Gemma's "+1" already;
//  - no logit soft-capping (Gemma 2 had it; Gemma 3 has none); the output is tied.
#include <cmath>
#include <stdexcept>

#include "model.hpp"

namespace llama {

ModelConfig gemma3_config(const GgufFile& file) {
    auto u = [&](const char* key) { return file.count(std::string("gemma3.") + key); };
    ModelConfig c = common_config(file, "gemma3");
    c.head_dim = u("attention.key_length");
    if (u("attention.value_length") != c.head_dim) throw std::runtime_error("gemma3: key and value lengths differ");
    if (file.has("gemma3.final_logit_softcapping") || file.has("gemma3.attn_logit_softcapping"))
        throw std::runtime_error("gemma3: logit soft-capping is not supported");
    if (file.has("gemma3.rope.scaling.type") || file.has("gemma3.rope.scaling.factor"))
        throw std::runtime_error("gemma3: RoPE scaling is not supported");
    c.embed_scale = std::sqrt(static_cast<float>(c.dim));
    c.rope_neox = c.qk_norm = c.post_norms = c.gelu = true;
    auto global_base = static_cast<float>(file.real("gemma3.rope.freq_base"));
    int window = u("attention.sliding_window");
    for (int l = 0; l < c.layers; ++l) {
        bool global = l % 6 == 5;
        c.layer.push_back({global ? global_base : 10000.0f, global ? 0 : window});
    }
    return c;
}

}  // namespace llama
