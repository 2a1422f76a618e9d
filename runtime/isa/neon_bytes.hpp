// Byte lanes of the generated NEON integer score kernels (templates/simd/score_int.cpp.j2):
// a B is a pair of 128-bit registers, 32 bytes, so the windows and lane order are
// AVX2's (avx2_bytes.hpp).  Products are summed exactly in int32, either by the
// dot-product extension (sdot, Armv8.2's FEAT_DotProd: dot_bytes_sdot, where has_sdot())
// or by widening multiplies (smull, sadalp: dot_bytes).  Both give the same integers.
#pragma once

#include "isa/int8.hpp"
#include "isa/neon.hpp"

#include <cstdint>
#include <cstring>
#if defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace tq::neon {

constexpr int kByteLanes = 32;
struct B {  // 32 bytes: levels, int8 centroids or the int8 query
    uint8x16_t lo, hi;
};
struct J {  // 8 int32 partial sums
    int32x4_t lo, hi;
};

// Where sdot is compiled: everywhere when the build targets the extension
// (__ARM_FEATURE_DOTPROD: -march=armv8.2-a+dotprod, Apple silicon), else with GCC only
// in the functions between TQ_NEON_SDOT_BEGIN and _END, chosen at run time.  Clang
// before 16 declares vdotq_s32 only for the first, so there it is the plain path.
#if defined(__ARM_FEATURE_DOTPROD)
#define TQ_NEON_SDOT_CODE 1
#define TQ_NEON_SDOT_BEGIN
#define TQ_NEON_SDOT_END
#elif defined(__GNUC__) && !defined(__clang__)
#define TQ_NEON_SDOT_CODE 1
#define TQ_NEON_SDOT_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"arch=armv8.2-a+dotprod\")")
#define TQ_NEON_SDOT_END _Pragma("GCC pop_options")
#else
#define TQ_NEON_SDOT_CODE 0
#define TQ_NEON_SDOT_BEGIN
#define TQ_NEON_SDOT_END
#endif

// Whether the kernels run sdot here: always where the build targets it, else
// (Linux, GCC) where the kernel's hardware capability bits say the CPU has it; not
// where TQ_BYTE_DOT is plain (int8.hpp).  Static, as plain_byte_dot.
static inline bool has_sdot() {
#if defined(__ARM_FEATURE_DOTPROD)
    return !int8::plain_byte_dot();
#elif TQ_NEON_SDOT_CODE && defined(__linux__) && defined(HWCAP_ASIMDDP)
    static const bool yes = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
    return yes && !int8::plain_byte_dot();
#else
    return false;
#endif
}

// The 8 bytes at p + O (a window, generator/int_layout.py), zero for O < 0.
template <int O>
inline uint8x8_t window(const uint8_t* p) {
    if constexpr (O < 0) {
        return vdup_n_u8(0);
    } else {
        return vld1_u8(p + O);
    }
}

// Four windows, bytes 8w..8w+7 from p + Ow: one load per half where they are consecutive.
template <int O0, int O1, int O2, int O3>
inline B load_windows(const uint8_t* p) {
    B b;
    if constexpr (O0 >= 0 && O1 == O0 + 8) {
        b.lo = vld1q_u8(p + O0);
    } else {
        b.lo = vcombine_u8(window<O0>(p), window<O1>(p));
    }
    if constexpr (O2 >= 0 && O3 == O2 + 8) {
        b.hi = vld1q_u8(p + O2);
    } else {
        b.hi = vcombine_u8(window<O2>(p), window<O3>(p));
    }
    return b;
}

// Each byte of window w shifted right by Sw, then masked: the field at bit Sw.  The
// shift is of 64-bit lanes, as AVX2's: the mask clears what comes in from the next byte.
template <int Mask, int S0, int S1, int S2, int S3>
inline B field_bytes(B x) {
    if constexpr (S0 != 0 || S1 != 0 || S2 != 0 || S3 != 0) {
        const int64x2_t lo = vcombine_s64(vdup_n_s64(-S0), vdup_n_s64(-S1));
        const int64x2_t hi = vcombine_s64(vdup_n_s64(-S2), vdup_n_s64(-S3));
        x.lo = vreinterpretq_u8_u64(vshlq_u64(vreinterpretq_u64_u8(x.lo), lo));
        x.hi = vreinterpretq_u8_u64(vshlq_u64(vreinterpretq_u64_u8(x.hi), hi));
    }
    const uint8x16_t m = vdupq_n_u8(static_cast<uint8_t>(Mask));
    return {vandq_u8(x.lo, m), vandq_u8(x.hi, m)};
}

// Fields below 2^(8 - S) moved up within their bytes.
template <int S>
inline B shl_bytes(B x) { return {vshlq_n_u8(x.lo, S), vshlq_n_u8(x.hi, S)}; }
inline B or_bytes(B a, B b) { return {vorrq_u8(a.lo, b.lo), vorrq_u8(a.hi, b.hi)}; }

inline B load_bytes(const std::int8_t* p) {
    const uint8_t* u = reinterpret_cast<const uint8_t*>(p);
    return {vld1q_u8(u), vld1q_u8(u + 16)};
}
// An int8 table of 16 or 32 entries for lookup_bytes (tbl looks up 16 bytes per register).
struct Table16 {
    int8x16_t t;
};
struct Table32 {
    int8x16x2_t t;
};
inline Table16 byte_table(const int8::Table<16>& t) { return {vld1q_s8(t.v)}; }
inline Table32 byte_table(const int8::Table<32>& t) { return {{{vld1q_s8(t.v), vld1q_s8(t.v + 16)}}}; }
// Byte k = table[levels_k] (levels < 16, or < 32).
inline B lookup_bytes(Table16 table, B levels) {
    return {vreinterpretq_u8_s8(vqtbl1q_s8(table.t, levels.lo)), vreinterpretq_u8_s8(vqtbl1q_s8(table.t, levels.hi))};
}
inline B lookup_bytes(const Table32& table, B levels) {
    return {vreinterpretq_u8_s8(vqtbl2q_s8(table.t, levels.lo)), vreinterpretq_u8_s8(vqtbl2q_s8(table.t, levels.hi))};
}

// Signed bytes multiply signed bytes directly: no preparation.
struct Centroids {
    int8x16_t lo, hi;
};
inline Centroids prepare(B c) { return {vreinterpretq_s8_u8(c.lo), vreinterpretq_s8_u8(c.hi)}; }

// acc + the products c_k q_k, 4 bytes per int32 lane, without the dot-product
// extension: products (|.| <= 127 · 127) widened to int16, pairs added into int32.
// The int32 lanes hold other sums of 4 bytes than sdot's; only the total is the same.
inline int32x4_t dot16(int32x4_t acc, int8x16_t c, int8x16_t q) {
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(c), vget_low_s8(q)));
    return vpadalq_s16(acc, vmull_high_s8(c, q));
}
inline J dot_bytes(J acc, const Centroids& c, B q) {
    return {dot16(acc.lo, c.lo, vreinterpretq_s8_u8(q.lo)), dot16(acc.hi, c.hi, vreinterpretq_s8_u8(q.hi))};
}

TQ_NEON_SDOT_BEGIN
// acc + the products c_k q_k with sdot: 4 bytes per int32 lane.
inline J dot_bytes_sdot(J acc, const Centroids& c, B q) {
#if TQ_NEON_SDOT_CODE
    return {vdotq_s32(acc.lo, c.lo, vreinterpretq_s8_u8(q.lo)), vdotq_s32(acc.hi, c.hi, vreinterpretq_s8_u8(q.hi))};
#else
    return dot_bytes(acc, c, q);  // never called: has_sdot() is false
#endif
}
TQ_NEON_SDOT_END

// Each key's sums start at zero (q: the query's n bytes, which AVX-512's VNNI path reads).
inline J start_sums(const std::int8_t*, int) { return {vdupq_n_s32(0), vdupq_n_s32(0)}; }
// sdot multiplies signed by signed bytes: its path prepares and starts as the plain one.
inline Centroids prepare_sdot(B c) { return prepare(c); }
inline J start_sums_sdot(const std::int8_t* q, int n) { return start_sums(q, n); }

inline std::int32_t hsum_ints(J x) { return vaddvq_s32(vaddq_s32(x.lo, x.hi)); }

// Lane k = hsum_ints(s[k]) for 8 registers at once (exact: integers).
inline J hsum_int_lanes(const J* s) {
    int32x4_t p[8];
    for (int k = 0; k < 8; ++k) p[k] = vaddq_s32(s[k].lo, s[k].hi);
    return {vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3])),
            vpaddq_s32(vpaddq_s32(p[4], p[5]), vpaddq_s32(p[6], p[7]))};
}

inline V to_float(J x) { return {vcvtq_f32_s32(x.lo), vcvtq_f32_s32(x.hi)}; }

// The integer value sum (templates/simd/accumulate_int.cpp.j2): four values' int8
// centroid registers c0..c3 interleaved so that int32 lane e of out[a] holds the four
// values' bytes of byte lane 16 (e / 4) + 4a + e % 4 (as AVX2's: zips per 128-bit half),
// and one dot per register and query sums weight times centroid over the four values.
inline void interleave4(const B (&c)[4], B (&out)[4]) {
    auto half = [&](uint8x16_t B::*h) {
        const uint16x8_t lo01 = vreinterpretq_u16_u8(vzip1q_u8(c[0].*h, c[1].*h));
        const uint16x8_t hi01 = vreinterpretq_u16_u8(vzip2q_u8(c[0].*h, c[1].*h));
        const uint16x8_t lo23 = vreinterpretq_u16_u8(vzip1q_u8(c[2].*h, c[3].*h));
        const uint16x8_t hi23 = vreinterpretq_u16_u8(vzip2q_u8(c[2].*h, c[3].*h));
        out[0].*h = vreinterpretq_u8_u16(vzip1q_u16(lo01, lo23));
        out[1].*h = vreinterpretq_u8_u16(vzip2q_u16(lo01, lo23));
        out[2].*h = vreinterpretq_u8_u16(vzip1q_u16(hi01, hi23));
        out[3].*h = vreinterpretq_u8_u16(vzip2q_u16(hi01, hi23));
    };
    half(&B::lo);
    half(&B::hi);
}
// The four sums' floats (interleave4's order) in the byte register's lane order: v[b]
// holds byte lanes 8b..8b+7, the half b / 2 of sums 2 (b % 2) and 2 (b % 2) + 1.
inline void to_lane_order(V (&v)[4]) {
    const V s0 = v[0], s1 = v[1], s2 = v[2], s3 = v[3];
    v[0] = {s0.lo, s1.lo};
    v[1] = {s2.lo, s3.lo};
    v[2] = {s0.hi, s1.hi};
    v[3] = {s2.hi, s3.hi};
}
// Four weight bytes (one per value) in every int32 lane.
inline B weight_bytes(std::uint32_t four) {
    const uint8x16_t w = vreinterpretq_u8_u32(vdupq_n_u32(four));
    return {w, w};
}
inline J zero_sums() { return {vdupq_n_s32(0), vdupq_n_s32(0)}; }
inline J add_sums(J a, J b) { return {vaddq_s32(a.lo, b.lo), vaddq_s32(a.hi, b.hi)}; }
// a k + b per int32 lane, wrapping (the score's residual: only the lanes' total must fit).
inline J mul_add_sums(J a, int k, J b) { return {vmlaq_n_s32(b.lo, a.lo, k), vmlaq_n_s32(b.hi, a.hi, k)}; }
// Both paths multiply signed bytes: the weights are biased (U - 127, int8.hpp).
// Without sdot, products widened to int16 and each 4 bytes' summed in their own
// int32 lane (dot_bytes' lanes mix them: only its total is sdot's).
inline int32x4_t dot_dwords(int32x4_t acc, int8x16_t c, int8x16_t w) {
    const int32x4_t low = vpaddlq_s16(vmull_s8(vget_low_s8(c), vget_low_s8(w)));
    const int32x4_t high = vpaddlq_s16(vmull_high_s8(c, w));
    return vaddq_s32(acc, vpaddq_s32(low, high));
}
inline J value_dot(J acc, const Centroids& c, B w) {
    return {dot_dwords(acc.lo, c.lo, vreinterpretq_s8_u8(w.lo)), dot_dwords(acc.hi, c.hi, vreinterpretq_s8_u8(w.hi))};
}
TQ_NEON_SDOT_BEGIN
inline J value_dot_sdot(J acc, const Centroids& c, B w) { return dot_bytes_sdot(acc, c, w); }
TQ_NEON_SDOT_END
inline Centroids prepare_values(B c) { return prepare(c); }
inline Centroids prepare_values_sdot(B c) { return prepare(c); }
constexpr int kWeightBias = 127, kWeightBias_sdot = 127;

}  // namespace tq::neon
