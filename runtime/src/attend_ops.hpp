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

    // The batch's integer tiles (int_tiles.hpp), in the fused integer kernels' arithmetic
    // (isa/int8.hpp), so that they give those kernels' integers and floats:
    // a query's d coordinates rounded (int8::round_query), out[i] = Q_i + 127; returns s_q.
    float (*round_query)(const float* q, std::size_t d, std::uint8_t* out);
    // A chunk's n <= 64 weight x scale products rounded (int8::quantize_weights, unbiased:
    // out[t] = U_t, 0 up to 64); returns s_w.
    float (*round_weights)(const float* weights, const float* scales, std::size_t n, std::uint8_t* out);
    // out[t] = scales[t] * (float(sums[t] - bias[t]) * qscale) for t < n: a row's scores.
    void (*int_scores)(const std::int32_t* sums, const std::int32_t* bias, const float* scales, std::size_t n,
                       float qscale, float* out);
    // acc[i] = fma(float(sums[i]), s, acc[i]) for i < d: a row's chunk of values.
    void (*int_accumulate)(const std::int32_t* sums, std::size_t d, float s, float* acc);
    // out[i] = (i < high_coords ? high : low)[levels[i]] for i < d (a multiple of 16;
    // levels < 32, tables of 32): one code's int8 centroids.  Returns the sum of out.
    std::int32_t (*lookup_levels)(const std::uint8_t* levels, std::size_t d, std::size_t high_coords,
                                  const std::int8_t* high, const std::int8_t* low, std::int8_t* out);
    // out[(t / 4) * 4 d + 4 i + t % 4] = rows[t * d + i] for t < n, i < d (a multiple of
    // 16), and 0 for n <= t < n rounded up to 4: each four rows' bytes interleaved.
    void (*interleave4)(const std::int8_t* rows, std::size_t n, std::size_t d, std::int8_t* out);
};

// The copy for the kernels' ISA (tq_kernels::isa; the runtime's own build for any
// other): every copy gives the same bits (each element's operations are the same).
AttendOps attend_ops_for(const char* isa);

}  // namespace tq::detail
