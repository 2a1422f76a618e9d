// Context shift for the tq memory: keys decoded from the cache get the rotation
// llama.cpp's RoPE gives a change of position, with the model's own RoPE parameters
// for each layer, before they are encoded again (llama.cpp does the same for its
// quantized K: dequantize, RoPE by the shift, quantize).
#pragma once

#include "llama.h"

#include <cstdint>

struct llama_model;
struct llama_cparams;

// keys: n_tokens x n_head_kv x head_dim floats, token i rotated in place by the RoPE
// of a position change of deltas[i] in model layer il.  False if ggml cannot compute it.
bool llama_tq_rope_shift(const llama_model & model, const llama_cparams & cparams, int il, float * keys, int n_tokens,
                         int n_head_kv, int head_dim, const llama_pos * deltas, int n_threads);
