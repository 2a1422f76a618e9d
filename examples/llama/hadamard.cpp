#include "hadamard.hpp"

#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

namespace llama {

BlockHadamard::BlockHadamard(int n) : n_(n), h_(static_cast<std::size_t>(n) * n) {
    if (n < 1 || !std::has_single_bit(static_cast<unsigned>(n)))
        throw std::invalid_argument("Hadamard size " + std::to_string(n) + " is not a power of two");
    // Sylvester's H_2n = [[H, H], [H, -H]] has entry (i, j) = (-1)^popcount(i & j).
    auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<float>(n)));
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) h_[static_cast<std::size_t>(i) * n + j] = std::popcount(static_cast<unsigned>(i & j)) % 2 ? -scale : scale;
}

void BlockHadamard::apply(const float* x, int d, float* y) const {
    for (int b = 0; b < d; b += n_)
        for (int i = 0; i < n_; ++i) {
            const float* row = &h_[static_cast<std::size_t>(i) * n_];
            float sum = 0;
            for (int j = 0; j < n_; ++j) sum += row[j] * x[b + j];
            y[b + i] = sum;
        }
}

int key_rotation_size(int head_dim) {
    if (head_dim <= 0 || head_dim % 64) return 0;
    int n = 64;
    while (head_dim % (2 * n) == 0) n *= 2;
    return n;
}

int value_rotation_size(int head_dim) { return head_dim > 0 && head_dim % 64 == 0 ? 64 : 0; }

}  // namespace llama
