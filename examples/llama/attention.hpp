// The FP32 attention every KV cache here ends in (FP32 as stored, or ggml blocks decoded
// to FP32): one token's query heads over n cached positions laid out
// [position][kv_head][head_dim]; query head h reads KV head h / (q_heads / kv_heads).
#pragma once

namespace llama {

// softmax(q·k / sqrt(d)) · v per query head.  d a multiple of 16; scores holds 4 n floats.
void attend_positions(const float* q, int q_heads, const float* keys, const float* values, int n, int kv_heads, int d,
                      float* scores, float* out);

}  // namespace llama
