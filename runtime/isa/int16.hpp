// The integer score's numbers for codebooks above 32 levels (key bits 6 to 8), where
// int8 tables would add more error than the key's own quantization (docs/kernels.md,
// "The integer score above 32 levels"); shared by every ISA's kernels so that all of
// them compute the same integers:
//   M = the largest level with d · M² < 2^31 (2047 up to d = 512), so that a key's
//       sum of d products is exact in int32;
//   centroid c_l ≈ step · T[l], T[l] = round(c_l / step) in [-M, M], one step per
//       variant: the largest |c| of its codebooks over M;
//   query q_i ≈ s_q · Q_i,  Q_i = round(q_i · M / max|q|) in [-M, M];
//   score = key_scale · ((s_q · step) · Σ_i Q_i T[l_i]), the sum exact in int32.
#pragma once

#include "isa/int8.hpp"  // max_magnitude

#include <cmath>
#include <cstdint>

namespace tq::int16 {

// M for head dim d: at most 2047, d · M² <= 2^31 - 1.
constexpr int max_level(int d) {
    int m = 2047;
    while (static_cast<long long>(d) * m * m > 2147483647LL) --m;
    return m;
}

// The step of codebooks whose largest magnitudes are a and b (ascending, symmetric
// codebooks: the last centroid), for levels up to M.
constexpr float step(int m, float a, float b = 0.0f) { return (a > b ? a : b) / static_cast<float>(m); }

// round(c[l] / step) for l < N.
template <int N>
struct Table {
    std::int16_t v[N];
};

template <int N>
constexpr Table<N> table(const float (&c)[N], float step) {
    Table<N> t{};
    for (int l = 0; l < N; ++l) {
        const double x = double(c[l]) / double(step);
        t.v[l] = static_cast<std::int16_t>(x >= 0 ? int(x + 0.5) : -int(-x + 0.5));
    }
    return t;
}

// Writes out[i] = Q_i for i < D and returns s_q (0, with every Q_i 0, for a zero query
// and for one whose largest |q_i| is below 2^-110, where M / max would overflow a float:
// int8::quantize_query's cutoff, 2^-120, is for M = 127).
// |q_i - s_q Q_i| <= s_q (1/2 + M · 3 · 2^-24): the half of the rounding to an integer,
// and |q_i| <= M s_q times the three float roundings of M / max, q_i · (M / max) and
// max / M.  Always inlined, for the reason int8.hpp gives.
template <int D>
[[gnu::always_inline]] inline float quantize_query(const float* q, std::int16_t* out) {
    constexpr float m = static_cast<float>(max_level(D));
    const float max = int8::max_magnitude(q, D);
    const float inv = max >= 0x1p-110f ? m / max : 0.0f;
    for (int i = 0; i < D; ++i) {
        float r = std::nearbyint(q[i] * inv);
        r = r > m ? m : r;
        r = r < -m ? -m : r;
        out[i] = static_cast<std::int16_t>(static_cast<int>(r));
    }
    return inv > 0 ? max / m : 0.0f;
}

}  // namespace tq::int16
