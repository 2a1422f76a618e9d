// The softmax's exponentials, vectorized: exp(x_t - m) for a chunk of scores,
// written in place, and their sum.  Plain C++ that the compiler turns into SIMD
// for the runtime's target (SSE2 on x86-64, NEON on aarch64): no libm call per score.
#pragma once

#include <cstddef>

namespace tq::detail {

// The largest of x[0 .. n) (n >= 1, no NaN).
float max_of(const float* x, std::size_t n);

// x[t] = exp(x[t] - m) for t < n, each within 2 ulp of std::exp (0 below
// exp(-87.3), where floats become subnormal); returns sum_t x[t], summed in double.
// Needs x[t] <= m (m the chunk's max) and no NaN: the attention's range check.
double exp_shifted_sum(float* x, std::size_t n, float m);

}  // namespace tq::detail
