#include "llama-tq-graph.h"

#include "llama-tq-memory.h"

#include "llama-cparams.h"
#include "llama-hparams.h"
#include "llama-impl.h"

#include <string>

namespace {

// What both tq inputs carry: the memory.  They hold no tensors (the op reads the
// ubatch's plan from the memory), so a graph is reusable whenever llama.cpp's own
// checks (token and sequence counts) pass.
struct tq_input {
    llama_tq_memory * mem;
};

class input_kv : public llm_graph_input_attn_kv, public tq_input {
public:
    input_kv(const llm_graph_context & g, llama_tq_memory * mem)
        : llm_graph_input_attn_kv(g.hparams, g.cparams, nullptr), tq_input{mem} {}
    void set_input(const llama_ubatch *) override {}
    bool can_reuse(const llm_graph_params &) override { return true; }
};

class input_kv_iswa : public llm_graph_input_attn_kv_iswa, public tq_input {
public:
    input_kv_iswa(const llm_graph_context & g, llama_tq_memory * mem)
        : llm_graph_input_attn_kv_iswa(g.hparams, g.cparams, nullptr), tq_input{mem} {}
    void set_input(const llama_ubatch *) override {}
    bool can_reuse(const llm_graph_params &) override { return true; }
};

llama_tq_memory * tq_memory(const llm_graph_context & g) {
    const auto * mctx = dynamic_cast<const llama_tq_memory_context *>(g.mctx);
    return mctx != nullptr ? mctx->memory() : nullptr;
}

// ggml_custom_op_t: every compute thread calls it (ith of nth).
void attention_op(ggml_tensor * dst, int ith, int nth, void * userdata) {
    const auto * op = static_cast<const llama_tq_layer_op *>(userdata);
    op->mem->attend(*op, dst, ith, nth);
}

ggml_tensor * f32_contiguous(ggml_context * ctx, ggml_tensor * t) {
    if (t->type != GGML_TYPE_F32) {
        t = ggml_cast(ctx, t, GGML_TYPE_F32);
    }
    return ggml_is_contiguous(t) ? t : ggml_cont(ctx, t);
}

}  // namespace

llm_graph_input_attn_kv * llama_tq_build_attn_inp_kv(const llm_graph_context & g) {
    llama_tq_memory * mem = tq_memory(g);
    if (mem == nullptr) {
        return nullptr;
    }
    return static_cast<llm_graph_input_attn_kv *>(g.res->add_input(std::make_unique<input_kv>(g, mem)));
}

llm_graph_input_attn_kv_iswa * llama_tq_build_attn_inp_kv_iswa(const llm_graph_context & g) {
    llama_tq_memory * mem = tq_memory(g);
    if (mem == nullptr) {
        return nullptr;
    }
    return static_cast<llm_graph_input_attn_kv_iswa *>(g.res->add_input(std::make_unique<input_kv_iswa>(g, mem)));
}

ggml_tensor * llama_tq_build_attn(const llm_graph_context & g, llm_graph_input_i * inp, ggml_tensor * wo,
                                  ggml_tensor * wo_b, ggml_tensor * wo_s, ggml_tensor * q_cur, ggml_tensor * k_cur,
                                  ggml_tensor * v_cur, ggml_tensor * kq_b, ggml_tensor * sinks, ggml_tensor * v_mla,
                                  float kq_scale, int il) {
    auto * tq = dynamic_cast<tq_input *>(inp);
    if (tq == nullptr) {
        return nullptr;
    }
    // What the op cannot compute as llama.cpp would: refused while the graph is built.
    // The context reserves its graphs when it is created, so a model that passes one of
    // these is refused there, with one line (llama_init_from_model catches the throw).
    if (kq_b != nullptr) {
        llama_tq_memory::refuse("attention scores with a position bias (kq_b) are not supported");
    }
    if (v_mla != nullptr) {
        llama_tq_memory::refuse("multi-head latent attention (MLA) is not supported");
    }
    if (k_cur == nullptr || v_cur == nullptr) {
        llama_tq_memory::refuse("layers that reuse another layer's keys and values are not supported");
    }
    if (g.cparams.training) {
        llama_tq_memory::refuse("training (llama_opt_init) is not supported: the tq attention has no backward pass; "
                                "use an f32 cache");
    }
    if (!(kq_scale > 0.0f)) {
        llama_tq_memory::refuse("a softmax scale of " + std::to_string(kq_scale) + " is not supported");
    }

    ggml_context * ctx0 = g.ctx0;
    // The sources the op reads: q, k, v and, for models that learn them, the sinks (per query head).
    ggml_tensor * args[4] = {f32_contiguous(ctx0, q_cur), f32_contiguous(ctx0, k_cur), f32_contiguous(ctx0, v_cur),
                             sinks != nullptr ? f32_contiguous(ctx0, sinks) : nullptr};
    llama_tq_layer_op * op = tq->mem->layer_op(il);
    op->kq_scale = kq_scale;
    op->causal = g.cparams.causal_attn;
    const int64_t n_tokens = q_cur->ne[2];
    ggml_tensor * cur = ggml_custom_4d(ctx0, GGML_TYPE_F32, q_cur->ne[0] * q_cur->ne[1], n_tokens, 1, 1, args,
                                       sinks != nullptr ? 4 : 3, attention_op, GGML_N_TASKS_MAX, op);
    g.cb(cur, "kqv_out", il);

    if (wo) {
        cur = g.build_lora_mm(wo, cur, wo_s);
    }
    if (wo_b) {
        cur = ggml_add(ctx0, cur, wo_b);
    }
    return cur;
}
