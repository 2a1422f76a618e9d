// The integer score path's numbers, shared by every ISA's kernels so that all of
// them compute the same integers (docs/kernels.md, "The integer score path"):
//   centroid c_l ≈ step · T[l], T[l] = round(c_l / step) in [-127, 127], one step
//       per variant: the largest |c| of its codebooks over 127;
//   query q_i ≈ s_q · Q_i,  Q_i = round(q_i · 127 / max|q|) in [-127, 127];
//   score = key_scale · ((s_q · step) · Σ_i Q_i T[l_i]), the sum exact in int32.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace tq::int8 {

// The step of codebooks whose largest magnitudes are a and b (ascending,
// symmetric codebooks: the last centroid).
constexpr float step(float a, float b = 0.0f) { return (a > b ? a : b) / 127.0f; }

// round(c[l] / step) for l < N, zero beyond: the Size bytes that one byte shuffle
// (16 levels) or two (32 levels) look up.
template <int Size>
struct Table {
    alignas(16) std::int8_t v[Size];
};

template <int N>
constexpr Table<(N <= 16 ? 16 : 32)> table(const float (&c)[N], float step) {
    static_assert(N <= 32, "the integer path looks up at most 32 levels per codebook");
    Table<(N <= 16 ? 16 : 32)> t{};
    for (int l = 0; l < N; ++l) {
        const double x = double(c[l]) / double(step);
        t.v[l] = static_cast<std::int8_t>(x >= 0 ? int(x + 0.5) : -int(-x + 0.5));
    }
    return t;
}

// Writes out[k] = Q_{coords[k]} for k < lanes (0 where coords[k] < 0; coords
// null: natural order, lanes == d) and returns s_q (0 for a zero query, whose
// Q are all 0).  |q_i - s_q Q_i| <= s_q (1/2 + 2^-16): the product's rounding
// before nearbyint adds at most 127 ulp of a unit to the half.
inline float quantize_query(const float* q, int d, const int* coords, int lanes, std::int8_t* out) {
    float max = 0;  // a compare, not std::fmax: that is a call into libm per coordinate
    for (int i = 0; i < d; ++i) {
        const float a = std::fabs(q[i]);
        max = a > max ? a : max;  // a NaN is passed over, as fmax does
    }
    const float inv = max > 0 ? 127.0f / max : 0.0f;
    for (int k = 0; k < lanes; ++k) {
        const int i = coords ? coords[k] : k;
        const float r = i < 0 ? 0.0f : std::nearbyint(q[i] * inv);
        out[k] = static_cast<std::int8_t>(r > 127 ? 127 : r < -127 ? -127 : r);
    }
    return max / 127.0f;
}

}  // namespace tq::int8
