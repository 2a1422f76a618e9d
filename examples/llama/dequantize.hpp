// ggml weight formats to FP32, at load time (the engine computes in FP32).
#pragma once

#include <vector>

#include "gguf.hpp"

namespace llama {

// All of t's elements as floats, row-major over ggml's shape (shape[0] fastest).
// Throws for a type this engine does not read.
std::vector<float> dequantize(const Tensor& t);

}  // namespace llama
