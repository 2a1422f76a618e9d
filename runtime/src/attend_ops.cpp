// AttendOps' bodies, compiled for the runtime's own target and, on x86-64, once more per
// target ISA (the compiler's target attribute; attend_ops.hpp).  No contraction (the
// runtime builds with -ffp-contract=off) and the same operations per element and the
// same folds, so every copy gives the same bits.
#include "attend_ops.hpp"

#include "float8.hpp"
#include "half_float.hpp"
#include "isa/int8.hpp"
#include "isas.hpp"

#include <cmath>
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

[[gnu::always_inline]] inline float round_query_body(const float* q, std::size_t d, std::uint8_t* out) {
    const float s_q = int8::round_query(q, int(d), reinterpret_cast<std::int8_t*>(out));
    for (std::size_t i = 0; i < d; ++i) out[i] = std::uint8_t(out[i] + 127);  // Q + 127 in [0, 254]
    return s_q;
}

[[gnu::always_inline]] inline void int_scores_body(const std::int32_t* sums, const std::int32_t* bias,
                                                   const float* scales, std::size_t n, float qscale, float* out) {
    for (std::size_t t = 0; t < n; ++t) out[t] = scales[t] * (static_cast<float>(sums[t] - bias[t]) * qscale);
}

[[gnu::always_inline]] inline void int_accumulate_body(const std::int32_t* sums, std::size_t d, float s, float* acc) {
    for (std::size_t i = 0; i < d; ++i) acc[i] = std::fma(static_cast<float>(sums[i]), s, acc[i]);
}

typedef std::int8_t B16 __attribute__((vector_size(16)));

[[gnu::always_inline]] inline std::int32_t lookup_levels_body(const std::uint8_t* levels, std::size_t d,
                                                              std::size_t high_coords, const std::int8_t* high,
                                                              const std::int8_t* low, std::int8_t* out) {
#if defined(__clang__)  // no variable shuffle among clang's vector extensions: a loop, the same bytes
    for (std::size_t i = 0; i < d; ++i) out[i] = (i < high_coords ? high : low)[levels[i]];
#else
    B16 h[2], l[2];
    std::memcpy(h, high, 32);
    std::memcpy(l, low, 32);
    const B16 lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    for (std::size_t i = 0; i < d; i += 16) {
        B16 x;
        std::memcpy(&x, levels + i, 16);
        // Two-table shuffles: index x of the 32 entries h[0] h[1] (or l[0] l[1]).
        const B16 hi = __builtin_shuffle(h[0], h[1], x), lo = __builtin_shuffle(l[0], l[1], x);
        const std::size_t left = high_coords > i ? high_coords - i : 0;  // lanes below high_coords
        const B16 pick = lane < static_cast<std::int8_t>(left < 16 ? left : 16);
        const B16 r = (hi & pick) | (lo & ~pick);
        std::memcpy(out + i, &r, 16);
    }
#endif
    std::int32_t sum = 0;
    for (std::size_t i = 0; i < d; ++i) sum += out[i];
    return sum;
}

[[gnu::always_inline]] inline void interleave4_body(const std::int8_t* rows, std::size_t n, std::size_t d,
                                                    std::int8_t* out) {
    for (std::size_t t0 = 0; t0 < n; t0 += 4) {
        B16 r[4];
        for (std::size_t i = 0; i < d; i += 16) {
#pragma GCC unroll 4
            for (std::size_t k = 0; k < 4; ++k)
                if (t0 + k < n)
                    std::memcpy(&r[k], rows + (t0 + k) * d + i, 16);
                else
                    r[k] = B16{};
            // Bytes of rows 0 1 and 2 3 paired, then the pairs paired: 4 i + k.
            const B16 a = __builtin_shufflevector(r[0], r[1], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
            const B16 b = __builtin_shufflevector(r[0], r[1], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
            const B16 c = __builtin_shufflevector(r[2], r[3], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
            const B16 e = __builtin_shufflevector(r[2], r[3], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
            const B16 o[4] = {
                __builtin_shufflevector(a, c, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23),
                __builtin_shufflevector(a, c, 8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31),
                __builtin_shufflevector(b, e, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23),
                __builtin_shufflevector(b, e, 8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31)};
            std::memcpy(out + (t0 / 4) * 4 * d + 4 * i, o, 64);
        }
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
    ATTRIBUTE void NAME##_rescale(float* a, double* e, std::size_t d, double keep) { rescale_body(a, e, d, keep); } \
    ATTRIBUTE float NAME##_round_query(const float* q, std::size_t d, std::uint8_t* out) {                      \
        return round_query_body(q, d, out);                                                                   \
    }                                                                                                         \
    ATTRIBUTE float NAME##_round_weights(const float* w, const float* s, std::size_t n, std::uint8_t* out) {     \
        return int8::quantize_weights(w, s, n, 0, out);                                                       \
    }                                                                                                         \
    ATTRIBUTE void NAME##_int_scores(const std::int32_t* sums, const std::int32_t* bias, const float* scales,     \
                                     std::size_t n, float qscale, float* out) {                               \
        int_scores_body(sums, bias, scales, n, qscale, out);                                                  \
    }                                                                                                         \
    ATTRIBUTE void NAME##_int_accumulate(const std::int32_t* sums, std::size_t d, float s, float* acc) {         \
        int_accumulate_body(sums, d, s, acc);                                                                 \
    }                                                                                                         \
    ATTRIBUTE std::int32_t NAME##_lookup_levels(const std::uint8_t* levels, std::size_t d, std::size_t high_coords,  \
                                                const std::int8_t* high, const std::int8_t* low, std::int8_t* out) { \
        return lookup_levels_body(levels, d, high_coords, high, low, out);                                   \
    }                                                                                                         \
    ATTRIBUTE void NAME##_interleave4(const std::int8_t* rows, std::size_t n, std::size_t d, std::int8_t* out) { \
        interleave4_body(rows, n, d, out);                                                                    \
    }
TQ_ATTEND_OPS_COPY(baseline, )
#define TQ_TARGET_COPY(NAME, TARGET) TQ_ATTEND_OPS_COPY(NAME, [[gnu::target(TARGET)]])
TQ_FOR_EACH_TARGET_ISA(TQ_TARGET_COPY)
#undef TQ_TARGET_COPY
#undef TQ_ATTEND_OPS_COPY

}  // namespace

AttendOps attend_ops_for(const char* isa) {
#define TQ_TARGET_COPY(NAME, TARGET) \
    if (std::strcmp(isa, #NAME) == 0)                                                                            \
        return {NAME##_widen,       NAME##_dot,           NAME##_scale,      NAME##_transpose,                 \
                NAME##_affine_rows, NAME##_rescale,       NAME##_round_query, NAME##_round_weights,           \
                NAME##_int_scores,  NAME##_int_accumulate, NAME##_lookup_levels, NAME##_interleave4};
    TQ_FOR_EACH_TARGET_ISA(TQ_TARGET_COPY)
#undef TQ_TARGET_COPY
    (void)isa;
    return {baseline_widen,       baseline_dot,         baseline_scale,      baseline_transpose,
            baseline_affine_rows, baseline_rescale,     baseline_round_query, baseline_round_weights,
            baseline_int_scores,  baseline_int_accumulate, baseline_lookup_levels, baseline_interleave4};
}

}  // namespace tq::detail
