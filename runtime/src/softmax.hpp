// The softmax's exponentials, vectorized: exp(x_t - m) for a chunk of scores,
// written in place, and their sum.  Plain C++ that the compiler turns into SIMD
// (softmax.cpp): no libm call per score.
#pragma once

#include <cstddef>

namespace tq::detail {

// The softmax's two passes over a chunk of scores, compiled for an ISA.
struct Softmax {
    // The largest of x[0 .. n) (n >= 1, no NaN).
    float (*max)(const float* x, std::size_t n);
    // x[t] = exp(x[t] - m) for t < n, each within 4 ulp of std::exp (0 below
    // exp(-87.3), where floats become subnormal); returns sum_t x[t], summed in double.
    // Needs x[t] <= m (m the chunk's max) and no NaN: the attention's range check.
    double (*exp_sum)(float* x, std::size_t n, float m);
};

// The copy for the kernels' ISA (tq_kernels::isa; the runtime's own build for any
// other): every copy gives the same bits.
Softmax softmax_for(const char* isa);

}  // namespace tq::detail
