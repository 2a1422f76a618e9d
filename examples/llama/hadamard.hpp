// llama.cpp's KV-cache rotation (ggml-org/llama.cpp PR #21038, on by default for a
// quantized cache since April 2026): an orthonormal Walsh-Hadamard matrix H (Sylvester's
// construction, scaled by 1/sqrt(n), no random signs), applied block-diagonally along the
// head dimension.  H is symmetric and H·H = I, so the same matrix rotates and un-rotates.
#pragma once

#include <vector>

namespace llama {

class BlockHadamard {
public:
    explicit BlockHadamard(int n);  // n a power of two
    int size() const { return n_; }
    float at(int i, int j) const { return h_[static_cast<std::size_t>(i) * n_ + j]; }
    // y = diag(H, H, ...) · x over d values, d a multiple of n; x and y must not overlap.
    void apply(const float* x, int d, float* y) const;

private:
    int n_;
    std::vector<float> h_;  // row-major n × n
};

// The block sizes llama.cpp picks (llama-kv-cache.cpp, build_input_k_rot/_v_rot): for keys
// the largest power of two >= 64 that divides head_dim, for values always 64.  It
// rotates only where head_dim % 64 == 0; elsewhere these return 0.
int key_rotation_size(int head_dim);
int value_rotation_size(int head_dim);

}  // namespace llama
