// AttendOps' bodies, compiled for the runtime's own target and, on x86-64, once more per
// target ISA (the compiler's target attribute; attend_ops.hpp).  No contraction (the
// runtime builds with -ffp-contract=off) and the same operations per element and the
// same folds, so every copy gives the same bits.
#include "attend_ops.hpp"

#include "float8.hpp"
#include "half_float.hpp"
#include "isas.hpp"

#include <cstring>

namespace tq::detail {
namespace {

[[gnu::always_inline]] inline void widen_body(const std::uint16_t* h, std::size_t n, float* out) {
    for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float(h[i]);
}

[[gnu::always_inline]] inline double dot_body(const float* x, const float* y, std::size_t d) {
    constexpr std::size_t kSums = 8;
    double part[kSums] = {};
    std::size_t i = 0;
    for (; i + kSums <= d; i += kSums)
        for (std::size_t j = 0; j < kSums; ++j) part[j] += double(x[i + j]) * y[i + j];
    for (std::size_t j = 0; i < d; ++i, ++j) part[j] += double(x[i]) * y[i];
    for (std::size_t half = kSums / 2; half > 0; half /= 2)
        for (std::size_t j = 0; j < half; ++j) part[j] += part[j + half];
    return part[0];
}

// Rows r[0..8) of eight columns each, transposed in place: r[b][a] = old r[a][b].
// Three rounds of two-register shuffles: pairs of rows interleaved by element, then
// by pairs of elements, then by halves.
[[gnu::always_inline]] inline void transpose8(F8 r[8]) {
    F8 s[8];
#pragma GCC unroll 4
    for (int a = 0; a < 8; a += 2) {
        s[a] = __builtin_shufflevector(r[a], r[a + 1], 0, 8, 2, 10, 4, 12, 6, 14);
        s[a + 1] = __builtin_shufflevector(r[a], r[a + 1], 1, 9, 3, 11, 5, 13, 7, 15);
    }
    // s[a]: rows a, a+1 of the even columns; s[a+1]: of the odd ones.
#pragma GCC unroll 2
    for (int a = 0; a < 8; a += 4)
#pragma GCC unroll 2
        for (int k = 0; k < 2; ++k) {
            r[a + k] = __builtin_shufflevector(s[a + k], s[a + k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            r[a + k + 2] = __builtin_shufflevector(s[a + k], s[a + k + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    // r[a + k]: rows a..a+3 of columns k | k+4; r[a + k + 2]: of columns k+2 | k+6.
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
        s[k] = __builtin_shufflevector(r[k], r[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        s[k + 4] = __builtin_shufflevector(r[k], r[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
#pragma GCC unroll 8
    for (int b = 0; b < 8; ++b) r[b] = s[b];
}

[[gnu::always_inline]] inline void transpose_body(const float* rows, std::size_t n, std::size_t d, float* out,
                                                  std::size_t ld) {
    const std::size_t n8 = n / 8 * 8, d8 = d / 8 * 8;
    for (std::size_t u0 = 0; u0 < n8; u0 += 8)
        for (std::size_t i0 = 0; i0 < d8; i0 += 8) {
            F8 r[8];
#pragma GCC unroll 8
            for (int a = 0; a < 8; ++a) load8(r[a], rows + (u0 + a) * d + i0);
            transpose8(r);
#pragma GCC unroll 8
            for (int b = 0; b < 8; ++b) std::memcpy(out + (i0 + b) * ld + u0, &r[b], sizeof r[b]);
        }
    for (std::size_t i = 0; i < d; ++i) {
        const std::size_t u_begin = i < d8 ? n8 : 0;  // the columns past d8: every row
        for (std::size_t u = u_begin; u < n; ++u) out[i * ld + u] = rows[u * d + i];
        for (std::size_t u = n; u < ld; ++u) out[i * ld + u] = 0.0f;
    }
}

[[gnu::always_inline]] inline void affine_rows_body(float* rows, std::size_t n, std::size_t d, const float* mul,
                                                    const float* add) {
    auto each = [&](auto f) {
        for (std::size_t u = 0; u < n; ++u)
            for (std::size_t i = 0; i < d; ++i) rows[u * d + i] = f(rows[u * d + i], i);
    };
    if (mul && add)
        each([&](float x, std::size_t i) { return x * mul[i] + add[i]; });
    else if (mul)
        each([&](float x, std::size_t i) { return x * mul[i]; });
    else if (add)
        each([&](float x, std::size_t i) { return x + add[i]; });
}

[[gnu::always_inline]] inline void scale_body(float* x, std::size_t n, float s) {
    for (std::size_t t = 0; t < n; ++t) x[t] *= s;
}

[[gnu::always_inline]] inline void rescale_body(float* a, double* e, std::size_t d, double keep) {
    for (std::size_t j = 0; j < d; ++j) {
        a[j] = float(keep * a[j]);
        e[j] *= keep;
    }
}

#define TQ_ATTEND_OPS_COPY(NAME, ATTRIBUTE)                                                                   \
    ATTRIBUTE void NAME##_widen(const std::uint16_t* h, std::size_t n, float* out) { widen_body(h, n, out); }    \
    ATTRIBUTE double NAME##_dot(const float* x, const float* y, std::size_t d) { return dot_body(x, y, d); }     \
    ATTRIBUTE void NAME##_scale(float* x, std::size_t n, float s) { scale_body(x, n, s); }                     \
    ATTRIBUTE void NAME##_transpose(const float* rows, std::size_t n, std::size_t d, float* out, std::size_t ld) { \
        transpose_body(rows, n, d, out, ld);                                                                  \
    }                                                                                                         \
    ATTRIBUTE void NAME##_affine_rows(float* rows, std::size_t n, std::size_t d, const float* mul,             \
                                      const float* add) {                                                     \
        affine_rows_body(rows, n, d, mul, add);                                                               \
    }                                                                                                         \
    ATTRIBUTE void NAME##_rescale(float* a, double* e, std::size_t d, double keep) { rescale_body(a, e, d, keep); }
TQ_ATTEND_OPS_COPY(baseline, )
#define TQ_TARGET_COPY(NAME, TARGET) TQ_ATTEND_OPS_COPY(NAME, [[gnu::target(TARGET)]])
TQ_FOR_EACH_TARGET_ISA(TQ_TARGET_COPY)
#undef TQ_TARGET_COPY
#undef TQ_ATTEND_OPS_COPY

}  // namespace

AttendOps attend_ops_for(const char* isa) {
#define TQ_TARGET_COPY(NAME, TARGET) \
    if (std::strcmp(isa, #NAME) == 0)                                                                            \
        return {NAME##_widen, NAME##_dot, NAME##_scale, NAME##_transpose, NAME##_affine_rows, NAME##_rescale};
    TQ_FOR_EACH_TARGET_ISA(TQ_TARGET_COPY)
#undef TQ_TARGET_COPY
    (void)isa;
    return {baseline_widen, baseline_dot, baseline_scale, baseline_transpose, baseline_affine_rows, baseline_rescale};
}

}  // namespace tq::detail
