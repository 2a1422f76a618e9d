// The engine's dense products, in FP32 on all threads of a pool.
#pragma once

#include "thread_pool.hpp"

namespace llama {

// y[t][n] = sum_k x[t][k] w[n][k] for t < rows, n < cols: x is rows × k, w is cols × k
// (a ggml weight: one output per row), y is rows × cols; k a multiple of 16.
void matmul(ThreadPool& pool, const float* x, int rows, int k, const float* w, int cols, float* y);

}  // namespace llama
