// The encode kernels' path for vectors outside the range their float arithmetic
// serves (docs/packed-format.md, "Levels").  A kernel sums the squares in float
// and rotates x before normalizing it; that is exact enough while the sum of
// squares lies in [kMinSquares, FLT_MAX].  Outside it, x is first scaled by a power
// of two (exact), so every ISA still writes the same bytes for every finite x.
#pragma once

// Every ISA writes the same bytes only under IEEE float semantics: -ffast-math lets
// the compiler reassociate the canonical sums and drop signed zeros (signed_level's
// u + 0 in isa/avx512.hpp).
#if defined(__FAST_MATH__)
#error "the encode kernels need IEEE float semantics: compile them without -ffast-math"
#endif

#include "turboquant/kernel_types.h"

#include <cfloat>
#include <cmath>
#include <cstdint>

namespace tq {

// 2^-60: with the norm at least 2^-30, a coordinate that rounds to a subnormal
// in the squares or the rotation is below 2^-33 of the norm.
constexpr float kMinSquares = 0x1p-60f;

// Internal linkage: every ISA's kernels compile their own copy with their own
// flags, so no translation unit can pick up another ISA's instructions.
namespace {

template <int D>
bool is_zero(const float* x) {
    for (int i = 0; i < D; ++i)
        if (x[i] != 0) return false;
    return true;
}

// Encodes x by encoding x 2^-e, whose largest |coordinate| lies in [1, 2) and
// so inside the kernel's range, and scaling the scale back by 2^e.  Refuses
// NaN and Inf (TQ_ERROR_NONFINITE) and norms above TQ_MAX_NORM(D)
// (TQ_ERROR_RANGE; the norm in double, summed in index order), writing nothing.
// x must not be all zero (the kernels encode that directly).
template <int D>
int encode_rescaled(tq_encode_fn encode, const float* signs, const float* x, int scale_kind, uint8_t* code,
                    float* scale) {
    float largest = 0;
    double squares = 0;
    for (int i = 0; i < D; ++i) {
        const float a = std::fabs(x[i]);
        if (!(a <= FLT_MAX)) return TQ_ERROR_NONFINITE;
        largest = a > largest ? a : largest;
        squares += static_cast<double>(x[i]) * x[i];  // exact products; no overflow in double
    }
    if (std::sqrt(squares) > TQ_MAX_NORM(D)) return TQ_ERROR_RANGE;
    const int e = std::ilogb(largest);
    float scaled[D];
    for (int i = 0; i < D; ++i) scaled[i] = std::ldexp(x[i], -e);  // exact but below FLT_MIN
    float s = 0;
    const int rc = encode(signs, scaled, scale_kind, code, &s);  // TQ_OK: x' is inside the range
    if (rc == TQ_OK) *scale = std::ldexp(s, e);
    return rc;
}

}  // namespace
}  // namespace tq
