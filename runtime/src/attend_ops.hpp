// The attention's bookkeeping loops, vectorized per ISA: the levers' half-float records
// and scales widened, the queries' dot products with means and sinks, the softmax
// weights normalized, and for the batch's dense tiles the levers applied to the decoded
// keys and values (a block's smoothing scales and means), the keys transposed and a
// row's running output rescaled at a new span.  Plain C++ (GCC/clang vector extensions
// for the transpose) that attend_ops.cpp compiles once per ISA, as softmax.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tq::detail {

struct AttendOps {
    // out[i] = h[i] as a float (exact) for i < n.
    void (*widen)(const std::uint16_t* h, std::size_t n, float* out);
    // <x, y> over d coordinates, in double: eight running sums (x[i] y[i] exact in
    // double), folded pairwise.
    double (*dot)(const float* x, const float* y, std::size_t d);
    // x[t] *= s for t < n.
    void (*scale)(float* x, std::size_t n, float s);
    // out[i * ld + u] = rows[u * d + i] for u < n and i < d, and out[i * ld + u] = 0 for
    // n <= u < ld (the product reads whole registers).  rows: [n][d].
    void (*transpose)(const float* rows, std::size_t n, std::size_t d, float* out, std::size_t ld);
    // rows[u * d + i] = rows[u * d + i] * mul[i] + add[i] for u < n, i < d (two roundings;
    // a null mul or add: that step left out).
    void (*affine_rows)(float* rows, std::size_t n, std::size_t d, const float* mul, const float* add);
    // a[j] = float(keep * a[j]) and e[j] *= keep for j < d, in double.
    void (*rescale)(float* a, double* e, std::size_t d, double keep);
};

// The copy for the kernels' ISA (tq_kernels::isa; the runtime's own build for any
// other): every copy gives the same bits (each element's operations are the same).
AttendOps attend_ops_for(const char* isa);

}  // namespace tq::detail
