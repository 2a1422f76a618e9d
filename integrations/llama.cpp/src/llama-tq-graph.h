// The tq attention in llama.cpp's graph: the hooks that llama-graph.cpp calls first
// in build_attn_inp_kv(_iswa) and build_attn (integrations/llama.cpp/patches).
// With a tq memory, a layer's attention is one custom op that writes the ubatch's
// keys and values into the compressed cache and attends over it
// (fa_tq_attention / fa_tq_attention_batch): no K/V tensors, no mask, nothing of
// the history decoded.  Each returns nullptr when the memory is not tq, and
// llama.cpp goes on as it was.
#pragma once

#include "llama-graph.h"

llm_graph_input_attn_kv * llama_tq_build_attn_inp_kv(const llm_graph_context & g);
llm_graph_input_attn_kv_iswa * llama_tq_build_attn_inp_kv_iswa(const llm_graph_context & g);

// build_attn for a tq input (from the two builders above), or nullptr for any other.
ggml_tensor * llama_tq_build_attn(const llm_graph_context & g, llm_graph_input_i * inp, ggml_tensor * wo,
                                  ggml_tensor * wo_b, ggml_tensor * wo_s, ggml_tensor * q_cur, ggml_tensor * k_cur,
                                  ggml_tensor * v_cur, ggml_tensor * kq_b, ggml_tensor * sinks, ggml_tensor * v_mla,
                                  float kq_scale, int il);
