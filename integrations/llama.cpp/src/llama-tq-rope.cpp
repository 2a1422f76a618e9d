#include "llama-tq-rope.h"

#include "ggml-cpu.h"
#include "ggml.h"
#include "llama-cparams.h"
#include "llama-hparams.h"
#include "llama-model.h"

#include <cstring>

static_assert(sizeof(llama_pos) == sizeof(int32_t), "positions are ggml_rope's int32");

bool llama_tq_rope_shift(const llama_model & model, const llama_cparams & cparams, int il, float * keys, int n_tokens,
                         int n_head_kv, int head_dim, const llama_pos * deltas, int n_threads) {
    const llama_hparams & hp = model.hparams;
    if (n_tokens == 0 || hp.rope_type == LLAMA_ROPE_TYPE_NONE || !hp.has_rope(uint32_t(il))) {  // ALiBi models: none
        return true;
    }
    const size_t n = size_t(n_tokens) * size_t(n_head_kv) * size_t(head_dim);
    const ggml_init_params params = {
        /*.mem_size   =*/ 2 * n * sizeof(float) + size_t(n_tokens) * sizeof(int32_t) + 4 * ggml_tensor_overhead() +
            ggml_graph_overhead() + (1u << 16),
        /*.mem_buffer =*/ nullptr,
        /*.no_alloc   =*/ false,
    };
    ggml_context * ctx = ggml_init(params);
    if (ctx == nullptr) {
        return false;
    }
    ggml_tensor * k = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, head_dim, n_head_kv, n_tokens);
    ggml_tensor * pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n_tokens);
    std::memcpy(k->data, keys, n * sizeof(float));
    std::memcpy(pos->data, deltas, size_t(n_tokens) * sizeof(int32_t));
    // As llama_kv_cache::build_rope_shift: the layer's frequency base and scale, its
    // frequency factors, the first n_rot dimensions, YaRN's parameters.
    ggml_tensor * rotated = ggml_rope_ext(ctx, k, pos, model.get_rope_factors(cparams, il), int(hp.n_rot(uint32_t(il))),
                                          hp.rope_type, int(cparams.n_ctx_orig_yarn),
                                          model.get_rope_freq_base(cparams, il), model.get_rope_freq_scale(cparams, il),
                                          cparams.yarn_ext_factor, cparams.yarn_attn_factor, cparams.yarn_beta_fast,
                                          cparams.yarn_beta_slow);
    ggml_cgraph * graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, rotated);
    const bool ok = ggml_graph_compute_with_ctx(ctx, graph, n_threads) == GGML_STATUS_SUCCESS;
    if (ok) {
        std::memcpy(keys, rotated->data, n * sizeof(float));
    }
    ggml_free(ctx);
    return ok;
}
