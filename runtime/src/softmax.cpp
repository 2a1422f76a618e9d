// exp(y) for y <= 0 as 2^k * p(r): k = round(y / ln 2), r = y - k ln 2 in
// [-ln2/2, ln2/2] (ln 2 split in two parts so k ln 2 is exact, Cody and Waite),
// p the degree-6 minimax polynomial of Cephes' expf (relative error < 2^-23 on
// that range), 2^k built in the exponent field.  Every step is a branch-free float
// operation on one lane, so a block of kWidth scores becomes vector code: SSE2 or
// NEON in the runtime's own build, and on x86-64 AVX2 and AVX-512 copies of the
// same source (the compiler's target attribute), picked by the kernels' ISA.  Each
// lane does the same IEEE operations in every copy (no contraction: the runtime
// builds with -ffp-contract=off), so every copy gives the same bits.
#include "softmax.hpp"

#include "float8.hpp"
#include "isas.hpp"

#include <bit>
#include <cstdint>
#include <cstring>

namespace tq::detail {
namespace {

constexpr std::size_t kWidth = 16;  // lanes of the partial sums
constexpr float kLowest = -87.3f;  // exp below it is subnormal: 0 instead

[[gnu::always_inline]] inline float exp_nonpositive(float y) {
    // y < kLowest, decided on the bits (y <= 0: a larger magnitude is a larger
    // unsigned pattern; +0 and -0 are not below): integer selects vectorize where
    // float compares would branch.
    const std::uint32_t y_bits = std::bit_cast<std::uint32_t>(y), lowest_bits = std::bit_cast<std::uint32_t>(kLowest);
    const bool below = y_bits > lowest_bits;
    const float x = std::bit_cast<float>(below ? lowest_bits : y_bits);
    // Round x / ln 2 to the nearest integer by adding 1.5 * 2^23 (no float-to-int rounding mode needed).
    constexpr float kShifter = 12582912.0f;
    const float shifted = x * 1.44269504088896341f + kShifter;
    const float k = shifted - kShifter;
    const float r = (x - k * 0.693359375f) - k * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    // 2^k: k + 127 in the exponent field (k in [-126, 0]); 0 where y was below kLowest.
    std::int32_t bits = std::bit_cast<std::int32_t>(shifted);
    bits = below ? 0 : (bits - 0x4B400000 + 127) << 23;
    return p * std::bit_cast<float>(bits);
}

// The largest of x[0 .. n).  Max is exact, so any grouping gives the same value:
// four vectors of independent running maxima (no chain of dependent compares),
// maxps' semantics per lane (x > part ? x : part, as a mask select).
[[gnu::always_inline]] inline float max_body(const float* x, std::size_t n) {
    constexpr std::size_t kVectors = 4, kStep = kVectors * 8;
    F8 part[kVectors];
    for (F8& p : part) p = F8{} + x[0];
    std::size_t t = 0;
    for (; t + kStep <= n; t += kStep)
#pragma GCC unroll 4
        for (std::size_t j = 0; j < kVectors; ++j) {
            F8 v;
            load8(v, x + t + 8 * j);
            const I8 above = v > part[j];
            part[j] = (F8)(((I8)v & above) | ((I8)part[j] & ~above));
        }
    for (std::size_t j = 1; j < kVectors; ++j) {
        const I8 above = part[j] > part[0];
        part[0] = (F8)(((I8)part[j] & above) | ((I8)part[0] & ~above));
    }
    float m = part[0][0];
    for (std::size_t j = 1; j < 8; ++j) m = part[0][j] > m ? part[0][j] : m;
    for (; t < n; ++t) m = x[t] > m ? x[t] : m;
    return m;
}

// x[t] = exp(x[t] - m), and their sum: kWidth running sums in double (independent
// chains of adds), folded pairwise.
[[gnu::always_inline]] inline double exp_sum_body(float* x, std::size_t n, float m) {
    for (std::size_t t = 0; t < n; ++t) x[t] = exp_nonpositive(x[t] - m);
    double part[kWidth] = {};
    std::size_t t = 0;
    for (; t + kWidth <= n; t += kWidth)
        for (std::size_t j = 0; j < kWidth; ++j) part[j] += x[t + j];
    for (std::size_t j = 0; t < n; ++t, ++j) part[j] += x[t];
    for (std::size_t half = kWidth / 2; half > 0; half /= 2)
        for (std::size_t j = 0; j < half; ++j) part[j] += part[j + half];
    return part[0];
}

#define TQ_SOFTMAX_COPY(NAME, ATTRIBUTE)                                                              \
    ATTRIBUTE float NAME##_max(const float* x, std::size_t n) { return max_body(x, n); }                    \
    ATTRIBUTE double NAME##_exp_sum(float* x, std::size_t n, float m) { return exp_sum_body(x, n, m); }
TQ_SOFTMAX_COPY(baseline, )
#define TQ_TARGET_COPY(NAME, TARGET) TQ_SOFTMAX_COPY(NAME, [[gnu::target(TARGET)]])
TQ_FOR_EACH_TARGET_ISA(TQ_TARGET_COPY)
#undef TQ_TARGET_COPY
#undef TQ_SOFTMAX_COPY

}  // namespace

Softmax softmax_for(const char* isa) {
#define TQ_TARGET_COPY(NAME, TARGET) \
    if (std::strcmp(isa, #NAME) == 0) return {NAME##_max, NAME##_exp_sum};
    TQ_FOR_EACH_TARGET_ISA(TQ_TARGET_COPY)
#undef TQ_TARGET_COPY
    (void)isa;
    return {baseline_max, baseline_exp_sum};
}

}  // namespace tq::detail
