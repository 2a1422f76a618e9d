// The integer score path's numbers, shared by every ISA's kernels so that all of
// them compute the same integers (docs/kernels.md, "The integer score path"):
//   centroid c_l ≈ step · T[l], T[l] = round(c_l / step) in [-127, 127], one step
//       per variant: the largest |c| of its codebooks over 127;
//   query q_i ≈ s_q · Q_i,  Q_i = round(q_i · 127 / max|q|) in [-127, 127];
//   score = key_scale · ((s_q · step) · Σ_i Q_i T[l_i]), the sum exact in int32;
//   for 32-level codebooks (5 bits) at head dims up to 512 the query's residual too,
//       q_i ≈ s_q (Q_i + R_i / 254), R_i in [-127, 127], and score = key_scale ·
//       ((s_q · step / 254) · (254 Σ_i Q_i T[l_i] + Σ_i R_i T[l_i])), the sum exact in
//       int32 (at most 512 · 127² · 255 < 2^31);
// and the integer value sum's (docs/kernels.md, "The integer value sum"):
//   per chunk of up to 64 values, p_t = weight_t · value_scale_t ≈ s_w · U_t,
//       U_t = round(p_t · 254 / max p) in [0, 254];
//   acc_i += (s_w · step) · Σ_t U_t T[l_{t,i}], the sum exact in int32, one fused
//       multiply-add per coordinate and chunk.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

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

// TQ_BYTE_DOT=plain (environment; any other value or none: the default): the kernels
// keep their plain dot product where the CPU has a faster one (has_vnni(), has_sdot()),
// so that one CPU can test and time both paths.  Read once; static, so that each
// translation unit has its own copy compiled with its own flags (see quantize_query).
static inline bool plain_byte_dot() {
    static const bool yes = [] {
        const char* v = std::getenv("TQ_BYTE_DOT");
        return v && std::strcmp(v, "plain") == 0;
    }();
    return yes;
}

// -128 Σ_k q_k over a query's n bytes: where each key's sums start on the x86 VNNI
// paths, whose centroids are biased by +128 (avx2_bytes.hpp, avx512_bytes.hpp).
// Always inlined, as window below.
[[gnu::always_inline]] inline std::int32_t vnni_bias(const std::int8_t* q, int n) {
    std::int32_t sum = 0;
    for (int k = 0; k < n; ++k) sum += q[k];
    return -128 * sum;
}

// The 8 bytes at p + O (a window of 8 coordinates' fields, generator/int_layout.py)
// as an integer, zero for O < 0: the x86 kernels' loads of scattered windows.
// Always inlined, as quantize_query below: AVX2's and AVX-512's kernels share it.
template <int O>
[[gnu::always_inline]] inline long long window(const std::uint8_t* p) {
    if constexpr (O < 0) {
        return 0;
    } else {
        std::uint64_t w;
        std::memcpy(&w, p + O, 8);
        return static_cast<long long>(w);
    }
}

// The query's rounding.  Always inlined: each ISA's kernels compile it with their
// own flags, and an out-of-line copy (as at -O0) would be one symbol for all of them,
// the linker's pick running, say, AVX2 code inside a scalar kernel.
//
// max |q_i| over the d coordinates that are not NaN, exactly (0 for none): the
// bits of |q_i| order as unsigned integers do, with a NaN's above +inf's, so an
// integer max finds it in any order, and compilers vectorize it (a float max's
// order they keep).  It runs per query and kernel call: with smoothing, once per
// block of positions (128 by default) for every row of a prefill tile.
[[gnu::always_inline]] inline float max_magnitude(const float* q, int d) {
    std::uint32_t m = 0;
    for (int i = 0; i < d; ++i) {
        std::uint32_t u;
        std::memcpy(&u, q + i, sizeof u);
        u &= 0x7fffffffu;
        u &= 0u - std::uint32_t(u <= 0x7f800000u);  // a NaN counts as 0, as fmax passes it over
        m = m > u ? m : u;
    }
    return std::bit_cast<float>(m);
}

// Writes out[k] = Q_{coords[k]} for k < lanes (0 where coords[k] < 0; coords
// null: natural order, lanes == D) and returns s_q: 0, with every Q_i 0, for a
// zero query and for one whose largest |q_i| is below 2^-120, where 127 / max
// would overflow to +inf (0 * inf is NaN, which no integer conversion may see);
// such a query's exact scores are below 2^-115 of the key's norm.
// |q_i - s_q Q_i| <= s_q (1/2 + 2^-14): the half of the rounding to an integer, and
// |q_i| <= 127 s_q times the three float roundings of 127 / max, q_i · (127 / max) and
// max / 127 (3 · 127 · 2^-24 < 2^-14).
// With residual (not null), also residual[k] = R_{coords[k]}, R_i = round(254 (x_i - Q_i))
// in [-127, 127], x_i = q_i · (127 / max) in float (x_i - Q_i is exact in float: Q_i is
// within half a unit of x_i, so Sterbenz's lemma holds where Q_i != 0), and then
// |q_i - s_q (Q_i + R_i / 254)| <= s_q (1/508 + 2^-14): the half of R's rounding
// over 254, the same three float roundings, and that of 254 (x_i - Q_i) (2^-25 s_q).
// The Q_i and R_i are rounded in coordinate order, a loop compilers vectorize, then
// moved to lanes.
constexpr int kResidualSteps = 254;  // R_i's steps per step of Q_i
template <int D>
[[gnu::always_inline]] inline float quantize_query(const float* q, const int* coords, int lanes, std::int8_t* out,
                                                    std::int8_t* residual = nullptr) {
    const float max = max_magnitude(q, D);
    const float inv = max >= 0x1p-120f ? 127.0f / max : 0.0f;
    std::int8_t natural[D], natural_residual[D];  // locals: no store into them can alias q, so the loop vectorizes
    for (int i = 0; i < D; ++i) {
        const float x = q[i] * inv;
        float r = std::nearbyint(x);
        r = r > 127.0f ? 127.0f : r;
        r = r < -127.0f ? -127.0f : r;
        natural[i] = static_cast<std::int8_t>(static_cast<int>(r));
        if (residual) natural_residual[i] = static_cast<std::int8_t>(static_cast<int>(std::nearbyint((x - r) * float(kResidualSteps))));
    }
    const auto to_lanes = [&](const std::int8_t* from, std::int8_t* to) {
        if (!coords)
            std::memcpy(to, from, D);
        else  // the kernels' lane orders are constants: unrolled, each move is one load and one store
#pragma GCC unroll 1024
            for (int k = 0; k < lanes; ++k) to[k] = coords[k] < 0 ? 0 : from[coords[k]];
    };
    to_lanes(natural, out);
    if (residual) to_lanes(natural_residual, residual);
    return inv > 0 ? max / 127.0f : 0.0f;
}

// The integer value sum's chunk: values whose weights share one scale s_w.
// |Σ_t U_t T| <= 64 · 254 · 127 < 2^24, so the sum converts to float exactly.
constexpr int kWeightChunk = 64;
constexpr int kWeightMax = 254;  // U_t - 127 fits a signed byte (the paths that bias it)

// The chunk's weights as bytes: p_t = weights[t] · scales[t] for t < n (<= 64), in
// float as the float kernels form it; out[t] = U_t - bias for t < n and 0 - bias (U = 0:
// padding) up to 64, where bias is 0 (vpdpbusd's unsigned bytes) or 127 (signed bytes:
// the sums then add 127 Σ_t T[l_{t,i}]).  Returns s_w = max p / 254: 0, with every
// U_t 0, where max p < 2^-120 (254 / max would overflow).  A p_t below 0 or not finite
// counts as 0 (the runtime's weights and scales are finite and not negative).
// |p_t - s_w U_t| <= s_w (1/2 + 2^-14): the half of the rounding to an integer, and
// p_t <= 254 s_w times the three float roundings of 254 / max, p_t · (254 / max) and
// max / 254 (3 · 254 · 2^-24 < 2^-14).  Always inlined, as quantize_query.
[[gnu::always_inline]] inline float quantize_weights(const float* weights, const float* scales, std::size_t n, int bias,
                                                      std::uint8_t* out) {
    // The padding is p = 0 (so U = 0), and the loops after the first run over the whole
    // chunk: fixed trip counts, which compilers vectorize (with n they kept scalar
    // rounding, most of a short call's time).
    float p[kWeightChunk];
    for (std::size_t t = 0; t < n; ++t) {
        const float x = weights[t] * scales[t];
        p[t] = x > 0.0f && x <= 0x1.fffffep127f ? x : 0.0f;
    }
    for (std::size_t t = n; t < std::size_t(kWeightChunk); ++t) p[t] = 0.0f;
    std::uint32_t max_bits = 0;  // p >= 0: its bits order as unsigned integers do (max_magnitude)
    for (int t = 0; t < kWeightChunk; ++t) {
        std::uint32_t u;
        std::memcpy(&u, p + t, sizeof u);
        max_bits = max_bits > u ? max_bits : u;
    }
    const float max = std::bit_cast<float>(max_bits);
    const float inv = max >= 0x1p-120f ? float(kWeightMax) / max : 0.0f;
    for (int t = 0; t < kWeightChunk; ++t) {
        float r = std::nearbyint(p[t] * inv);
        r = r > float(kWeightMax) ? float(kWeightMax) : r;
        out[t] = static_cast<std::uint8_t>(static_cast<int>(r) - bias);
    }
    return inv > 0 ? max / float(kWeightMax) : 0.0f;
}

}  // namespace tq::int8
