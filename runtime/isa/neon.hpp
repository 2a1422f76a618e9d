// Building blocks of the generated NEON kernels (AArch64 Advanced SIMD, part of
// every AArch64 CPU: no flags).  The same names exist in avx2.hpp and avx512.hpp:
// one template (templates/simd/) serves all three.  A vector V is a pair of
// 128-bit registers, 8 floats: the packed layout's per-register planes, the lane
// order of the dword unpacking and the canonical sums are then AVX2's, and every
// helper rounds as its AVX2 namesake does (fused multiply-adds where AVX2 fuses),
// so the caches' bytes are the same on every ISA.
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tq::neon {

constexpr int kLanes = 8;
struct V {  // 8 floats: lanes 0-3 in lo, 4-7 in hi
    float32x4_t lo, hi;
};
struct I {  // 8 uint32 levels
    uint32x4_t lo, hi;
};

inline V load(const float* p) { return {vld1q_f32(p), vld1q_f32(p + 4)}; }
inline void store(float* p, V x) {
    vst1q_f32(p, x.lo);
    vst1q_f32(p + 4, x.hi);
}
// Lane w = base[idx[w]]: a permutation into the kernels' lane order (kLaneCoord).
inline V gather(const float* base, const int* idx) {
    alignas(16) float lanes[8];
    for (int w = 0; w < 8; ++w) lanes[w] = base[idx[w]];
    return load(lanes);
}
// base[idx[w]] = lane w: gather's inverse.
inline void scatter(float* base, const int* idx, V x) {
    alignas(16) float lanes[8];
    store(lanes, x);
    for (int w = 0; w < 8; ++w) base[idx[w]] = lanes[w];
}
inline V zero() { return {vdupq_n_f32(0), vdupq_n_f32(0)}; }
inline V set1(float x) { return {vdupq_n_f32(x), vdupq_n_f32(x)}; }
inline V add(V a, V b) { return {vaddq_f32(a.lo, b.lo), vaddq_f32(a.hi, b.hi)}; }
inline V sub(V a, V b) { return {vsubq_f32(a.lo, b.lo), vsubq_f32(a.hi, b.hi)}; }
inline V mul(V a, V b) { return {vmulq_f32(a.lo, b.lo), vmulq_f32(a.hi, b.hi)}; }
inline V fmadd(V a, V b, V c) { return {vfmaq_f32(c.lo, a.lo, b.lo), vfmaq_f32(c.hi, a.hi, b.hi)}; }

// ((x0+x1) + (x2+x3)) + ((x4+x5) + (x6+x7)), the order of avx2.hpp's hsum.
inline float hsum(V x) {
    const float32x4_t p = vpaddq_f32(x.lo, x.hi);  // x0+x1, x2+x3, x4+x5, x6+x7
    const float32x4_t q = vpaddq_f32(p, p);
    return vgetq_lane_f32(q, 0) + vgetq_lane_f32(q, 1);
}

// Lane j = hsum(s[j]) for 8 registers at once.
inline V hsum_lanes(const V* s) {
    float32x4_t p[8];
    for (int j = 0; j < 8; ++j) p[j] = vpaddq_f32(s[j].lo, s[j].hi);
    return {vpaddq_f32(vpaddq_f32(p[0], p[1]), vpaddq_f32(p[2], p[3])),
            vpaddq_f32(vpaddq_f32(p[4], p[5]), vpaddq_f32(p[6], p[7]))};
}

// The first Stages FWHT stages (butterflies 1, 2, 4 apart) inside one V, in the
// scalar kernels' order and roundings: lane i becomes x_i + x_{i^s} (bit s of i
// clear) or x_{i^s} - x_i (bit s set), as a multiply-add by +-1 like AVX2's.
template <int Stages = 3>
inline V fwht_lanes(V x) {
    static constexpr float kS1[4] = {1, -1, 1, -1}, kS2[4] = {1, 1, -1, -1};
    if constexpr (Stages >= 1) {
        const float32x4_t s = vld1q_f32(kS1);
        x = {vfmaq_f32(vrev64q_f32(x.lo), x.lo, s), vfmaq_f32(vrev64q_f32(x.hi), x.hi, s)};
    }
    if constexpr (Stages >= 2) {
        const float32x4_t s = vld1q_f32(kS2);
        x = {vfmaq_f32(vextq_f32(x.lo, x.lo, 2), x.lo, s), vfmaq_f32(vextq_f32(x.hi, x.hi, 2), x.hi, s)};
    }
    if constexpr (Stages >= 3) x = {vfmaq_f32(x.hi, x.lo, vdupq_n_f32(1)), vfmaq_f32(x.lo, x.hi, vdupq_n_f32(-1))};
    return x;
}

// The dense Hadamard stages (generator/hadamard.py) on blocks of S = 4 lanes:
// block Slot of x copied into both blocks, and the blocks whose bit is set in Neg
// negated (exactly: a sign flip).
template <int S, int Slot>
inline V broadcast_block(V x) {
    static_assert(S == 4);
    return Slot ? V{x.hi, x.hi} : V{x.lo, x.lo};
}
template <int S, unsigned Neg>
inline V negate_blocks(V x) {
    static_assert(S == 4);
    return {Neg & 1 ? vnegq_f32(x.lo) : x.lo, Neg & 2 ? vnegq_f32(x.hi) : x.hi};
}
inline V neg(V x) { return {vnegq_f32(x.lo), vnegq_f32(x.hi)}; }

inline void butterfly(V& a, V& b) {
    const V t = add(a, b);
    b = sub(a, b);
    a = t;
}

// Float sums in the canonical order of isa/scalar.hpp (Sum8): register i is block i
// and feeds chain i % 4; the products round before they add (no FMA), and hsum
// adds the 8 lanes in the canonical tree.
struct Sum8 {
    V chain[4] = {zero(), zero(), zero(), zero()};
    void add_products(int reg, V a, V b) { chain[reg % 4] = add(chain[reg % 4], mul(a, b)); }
    float total() const { return hsum(add(add(chain[0], chain[1]), add(chain[2], chain[3]))); }
};

inline V abs_(V x) { return {vabsq_f32(x.lo), vabsq_f32(x.hi)}; }

// A table of L floats for per-lane lookup by level: byte table lookups (tbl) up
// to 16 entries, a lane-by-lane load from memory beyond.  Levels must be < L:
// unlike AVX2's permutes, tbl reads every index bit (lookup_field masks).
template <int L>
struct Table {
    const float* data;
    uint8x16x4_t bytes;  // entries 0..15, zero beyond L
    explicit Table(const float* t) : data(t) {
        alignas(16) float pad[16] = {};
        std::memcpy(pad, t, sizeof(float) * (L < 16 ? L : 16));
        const auto* b = reinterpret_cast<const uint8_t*>(pad);
        bytes = {{vld1q_u8(b), vld1q_u8(b + 16), vld1q_u8(b + 32), vld1q_u8(b + 48)}};
    }
    float32x4_t lookup4(uint32x4_t idx) const {
        if constexpr (L <= 16) {
            // Lane index i becomes the byte indices 4i .. 4i+3 of its float.
            const uint8x16_t at = vreinterpretq_u8_u32(vmlaq_n_u32(vdupq_n_u32(0x03020100u), idx, 0x04040404u));
            if constexpr (L <= 8) return vreinterpretq_f32_u8(vqtbl2q_u8(uint8x16x2_t{{bytes.val[0], bytes.val[1]}}, at));
            else return vreinterpretq_f32_u8(vqtbl4q_u8(bytes, at));
        } else {
            alignas(16) uint32_t i[4];
            vst1q_u32(i, idx);
            const float v[4] = {data[i[0]], data[i[1]], data[i[2]], data[i[3]]};
            return vld1q_f32(v);
        }
    }
    V lookup(I idx) const { return {lookup4(idx.lo), lookup4(idx.hi)}; }
    // lookup(idx & Mask).
    template <int Mask>
    V lookup_field(I idx) const {
        const uint32x4_t m = vdupq_n_u32(Mask);
        return {lookup4(vandq_u32(idx.lo, m)), lookup4(vandq_u32(idx.hi, m))};
    }
};

template <int Bits>
inline I bucketize(V u, const Table<(1 << Bits)>& boundaries) {
    I idx = {vdupq_n_u32(0), vdupq_n_u32(0)};
    for (int step = (1 << Bits) / 2; step; step >>= 1) {
        const uint32x4_t st = vdupq_n_u32(static_cast<uint32_t>(step));
        const V b = boundaries.lookup({vaddq_u32(idx.lo, vdupq_n_u32(step - 1)), vaddq_u32(idx.hi, vdupq_n_u32(step - 1))});
        idx = {vaddq_u32(idx.lo, vandq_u32(vcgeq_f32(u.lo, b.lo), st)), vaddq_u32(idx.hi, vandq_u32(vcgeq_f32(u.hi, b.hi), st))};
    }
    return idx;
}

// The level of u from j, the number of positive boundaries <= |u| (avx2.hpp's
// mirror): j ^ (2^(Bits-1) - 1 - mask), the mask all ones where u >= 0 (-0 too).
template <int Bits>
inline I mirror(I j, V u) {
    const uint32x4_t below = vdupq_n_u32((1u << (Bits - 1)) - 1);
    return {veorq_u32(j.lo, vsubq_u32(below, vcgezq_f32(u.lo))), veorq_u32(j.hi, vsubq_u32(below, vcgezq_f32(u.hi)))};
}

inline I widen_bytes(uint8x8_t b) {
    const uint16x8_t h = vmovl_u8(b);
    return {vmovl_u16(vget_low_u16(h)), vmovl_high_u16(h)};
}

// Lane i = byte p[i - Shift] (0 where that is outside p[0..8)) shifted right by Bit and masked.
template <int Bit, int Mask, int Shift = 0>
inline I field(const uint8_t* p) {
    uint64x1_t word = vreinterpret_u64_u8(vld1_u8(p));
    if constexpr (Shift > 0) word = vshl_n_u64(word, 8 * Shift);
    if constexpr (Shift < 0) word = vshr_n_u64(word, -8 * Shift);
    I x = widen_bytes(vreinterpret_u8_u64(word));
    if constexpr (Bit != 0) x = {vshrq_n_u32(x.lo, Bit), vshrq_n_u32(x.hi, Bit)};
    if constexpr (Mask != 255) x = {vandq_u32(x.lo, vdupq_n_u32(Mask)), vandq_u32(x.hi, vdupq_n_u32(Mask))};
    return x;
}

// Lane i = field (First + i / N) of width W in byte i % N of the N-byte word at p.
template <int N, int W, int First>
inline I small_field(const uint8_t* p) {
    std::uint64_t word = 0;
    std::memcpy(&word, p, N);
    alignas(8) std::uint8_t pattern[8];
    alignas(16) std::int32_t shifts[8];  // negative: shift right
    for (int i = 0; i < 8; ++i) pattern[i] = static_cast<std::uint8_t>(i % N);
    for (int i = 0; i < 8; ++i) shifts[i] = -(First + i / N) * W;
    const I x = widen_bytes(vtbl1_u8(vcreate_u8(word), vld1_u8(pattern)));
    const uint32x4_t mask = vdupq_n_u32((1u << W) - 1);
    return {vandq_u32(vshlq_u32(x.lo, vld1q_s32(shifts)), mask), vandq_u32(vshlq_u32(x.hi, vld1q_s32(shifts + 4)), mask)};
}

// Lanes whose bit is set in Mask from b, the others from a.
template <unsigned Mask>
inline uint32x4_t lane_mask(int first) {
    alignas(16) std::uint32_t m[4];
    for (int i = 0; i < 4; ++i) m[i] = (Mask >> (first + i)) & 1 ? ~0u : 0u;
    return vld1q_u32(m);
}
template <unsigned Mask>
inline I blend(I a, I b) { return {vbslq_u32(lane_mask<Mask>(0), b.lo, a.lo), vbslq_u32(lane_mask<Mask>(4), b.hi, a.hi)}; }
template <unsigned Mask>
inline V blend(V a, V b) { return {vbslq_f32(lane_mask<Mask>(0), b.lo, a.lo), vbslq_f32(lane_mask<Mask>(4), b.hi, a.hi)}; }

template <int N>
inline I shl(I x) { return {vshlq_n_u32(x.lo, N), vshlq_n_u32(x.hi, N)}; }
template <int N>
inline I shr(I x) {
    if constexpr (N == 0) return x;
    else return {vshrq_n_u32(x.lo, N), vshrq_n_u32(x.hi, N)};
}
inline I or_(I a, I b) { return {vorrq_u32(a.lo, b.lo), vorrq_u32(a.hi, b.hi)}; }
template <int Mask>
inline I and_(I x) { return {vandq_u32(x.lo, vdupq_n_u32(Mask)), vandq_u32(x.hi, vdupq_n_u32(Mask))}; }

// Low byte of each lane to dst[0..8).
inline void store_bytes(uint8_t* dst, I x) {
    vst1_u8(dst, vmovn_u16(vcombine_u16(vmovn_u32(x.lo), vmovn_u32(x.hi))));
}

// store_bytes of a, b, c and d to dst[0..32).
inline void store_bytes4(uint8_t* dst, I a, I b, I c, I d) {
    const auto narrow = [](I x) { return vmovn_u16(vcombine_u16(vmovn_u32(x.lo), vmovn_u32(x.hi))); };
    vst1q_u8(dst, vcombine_u8(narrow(a), narrow(b)));
    vst1q_u8(dst + 16, vcombine_u8(narrow(c), narrow(d)));
}

// A register of 8 dwords from p[0..32) (the dword_lanes unpacking).
inline I load_dwords(const uint8_t* p) {
    return {vreinterpretq_u32_u8(vld1q_u8(p)), vreinterpretq_u32_u8(vld1q_u8(p + 16))};
}

// Hint the cache to fetch the line `ahead` bytes after p.  The address is formed
// as an integer: it may lie past the end of the array, which a prefetch never touches.
inline void prefetch(const void* p, std::size_t ahead) {
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) + ahead));
}

// butterfly() on one register's worth of floats in memory.
inline void butterfly_in_memory(float* a, float* b) {
    const V x = load(a), y = load(b);
    store(a, add(x, y));
    store(b, sub(x, y));
}

}  // namespace tq::neon
