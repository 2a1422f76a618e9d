// Building blocks of the generated AVX-512 kernels (compiled with -mavx512f
// -mavx512bw -mavx512vl -mavx512dq -mfma).  The same names exist in avx2.hpp:
// one template (templates/simd/) serves both ISAs.
#pragma once

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the unused merge
// source and warn -Wuninitialized once inlined (GCC bug 105593, fixed in 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#if TQ_EMULATED_AVX512
#include "isa/avx512_emulated.hpp"  // SIMDe, for testing on CPUs without AVX-512
#else
#include <immintrin.h>
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tq::avx512 {

constexpr int kLanes = 16;
using V = __m512;   // 16 floats
using I = __m512i;  // 16 int32 levels

inline V load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, V x) { _mm512_storeu_ps(p, x); }
// Lane w = base[idx[w]]: a permutation into the kernels' lane order (kLaneCoord), once
// per call, one gather per register instead of a scalar move per coordinate.
inline V gather(const float* base, const int* idx) {
    return _mm512_i32gather_ps(_mm512_loadu_si512(idx), base, 4);
}
// base[idx[w]] = lane w: gather's inverse.
inline void scatter(float* base, const int* idx, V x) { _mm512_i32scatter_ps(base, _mm512_loadu_si512(idx), x, 4); }
inline V zero() { return _mm512_setzero_ps(); }
inline V set1(float x) { return _mm512_set1_ps(x); }
inline V add(V a, V b) { return _mm512_add_ps(a, b); }
inline V sub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V mul(V a, V b) { return _mm512_mul_ps(a, b); }
inline V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline float hsum(V x) { return _mm512_reduce_add_ps(x); }

// Lane j = the sum of s[j]'s lanes for 16 registers at once, with add() on their
// bit patterns (hsum_lanes' floats, avx512_bytes.hpp's int32): a transposing
// reduction, about 2 shuffles per register instead of 4.
template <class Add>
inline V transpose_sums(const V* s, Add add) {
    V r[8], w[4], z[2];
    for (int i = 0; i < 8; ++i)  // 256-bit halves: [s_2i half sums | s_2i+1 half sums]
        r[i] = add(_mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0x44), _mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0xEE));
    for (int i = 0; i < 4; ++i)  // 128-bit lane q of w_i: quarter sums of s_4i+q
        w[i] = add(_mm512_shuffle_f32x4(r[2 * i], r[2 * i + 1], 0x88), _mm512_shuffle_f32x4(r[2 * i], r[2 * i + 1], 0xDD));
    for (int i = 0; i < 2; ++i)
        z[i] = add(_mm512_shuffle_ps(w[2 * i], w[2 * i + 1], 0x44), _mm512_shuffle_ps(w[2 * i], w[2 * i + 1], 0xEE));
    const V sums = add(_mm512_shuffle_ps(z[0], z[1], 0x88), _mm512_shuffle_ps(z[0], z[1], 0xDD));
    // lane 4q + m holds s_4m+q
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), sums);
}
inline V hsum_lanes(const V* s) { return transpose_sums(s, [](V a, V b) { return _mm512_add_ps(a, b); }); }

// The first Stages FWHT stages (butterflies 1, 2, 4, 8 apart) inside one register,
// in the same order and with the same roundings as the scalar kernels: lane i
// becomes x_i + x_{i^s} (bit s of i clear) or x_{i^s} - x_i (bit s set).
template <int Stages = 4>
inline V fwht_lanes(V x) {
    const V s1 = _mm512_setr_ps(1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1);
    const V s2 = _mm512_setr_ps(1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1);
    const V s4 = _mm512_setr_ps(1, 1, 1, 1, -1, -1, -1, -1, 1, 1, 1, 1, -1, -1, -1, -1);
    const V s8 = _mm512_setr_ps(1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1);
    if constexpr (Stages >= 1) x = _mm512_fmadd_ps(x, s1, _mm512_permute_ps(x, 0xB1));
    if constexpr (Stages >= 2) x = _mm512_fmadd_ps(x, s2, _mm512_permute_ps(x, 0x4E));
    if constexpr (Stages >= 3) x = _mm512_fmadd_ps(x, s4, _mm512_shuffle_f32x4(x, x, 0xB1));
    if constexpr (Stages >= 4) x = _mm512_fmadd_ps(x, s8, _mm512_shuffle_f32x4(x, x, 0x4E));
    return x;
}

// The dense Hadamard stages (generator/hadamard.py) on blocks of S < 16 lanes:
// block Slot of x copied into every block, and the lanes of the blocks whose bit
// is set in Neg negated (exactly: a sign flip).
template <int S, int Slot>
inline V broadcast_block(V x) {
    static_assert(S == 4 || S == 8);
    constexpr int a = S == 4 ? Slot : 2 * Slot, b = S == 4 ? Slot : 2 * Slot + 1;
    return _mm512_shuffle_f32x4(x, x, a | b << 2 | a << 4 | b << 6);
}
template <int S, unsigned Neg>
inline V negate_blocks(V x) {
    constexpr auto bit = [](int lane) { return (Neg >> (lane / S)) & 1 ? int(0x80000000u) : 0; };
    const I m = _mm512_setr_epi32(bit(0), bit(1), bit(2), bit(3), bit(4), bit(5), bit(6), bit(7), bit(8), bit(9),
                                  bit(10), bit(11), bit(12), bit(13), bit(14), bit(15));
    return _mm512_xor_ps(x, _mm512_castsi512_ps(m));
}
inline V neg(V x) { return _mm512_xor_ps(x, _mm512_set1_ps(-0.0f)); }

// (a, b) <- (a + b, a - b)
inline void butterfly(V& a, V& b) {
    const V t = _mm512_add_ps(a, b);
    b = _mm512_sub_ps(a, b);
    a = t;
}

// Float sums in the canonical order of isa/scalar.hpp (Sum8): register i holds
// blocks 2i and 2i+1, which feed chains 2i % 4 and (2i+1) % 4, so pair[i % 2]
// holds chains 2(i % 2) (low half) and 2(i % 2) + 1 (high half).  The products
// round before they add (no FMA).  Registers 0 and 1 start the chains, as 0 + p = p
// for every product encode sums (squares, and |u| times a magnitude: none is -0):
// add_products takes registers 0, 1, 2, ... in order, and products that are never -0.
// total() adds chains and lanes in registers: 5 shuffles and 6 adds.
struct Sum8 {
    V pair[2] = {zero(), zero()};
    void add_products(int reg, V a, V b) { pair[reg % 2] = reg < 2 ? mul(a, b) : add(pair[reg % 2], mul(a, b)); }
    float total() const {
        // lanes k < 8: (c0 + c1) + (c2 + c3), then the tree ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))
        V s = add(add(pair[0], _mm512_shuffle_f32x4(pair[0], pair[0], 0x4E)),
                  add(pair[1], _mm512_shuffle_f32x4(pair[1], pair[1], 0x4E)));
        s = add(s, _mm512_permute_ps(s, 0xB1));
        s = add(s, _mm512_permute_ps(s, 0x4E));
        return _mm_cvtss_f32(_mm512_castps512_ps128(add(s, _mm512_shuffle_f32x4(s, s, 0xB1))));
    }
};

inline V abs_(V x) { return _mm512_abs_ps(x); }

// A table of L floats for per-lane lookup by level: in registers up to 32
// entries, a gather from memory beyond.
template <int L>
struct Table {
    const float* data;
    V lo, hi;
    // Masked loads, not a copy into a zeroed buffer: a 64-byte load of bytes that
    // smaller stores just wrote waits for them to retire (no store forwarding), at
    // the head of encode's level search.
    explicit Table(const float* t) : data(t), lo(_mm512_maskz_loadu_ps(lanes(L), t)), hi(high(t)) {}
    // Entries 16.. (none below 17 entries: t + 16 would point past the table).
    static V high(const float* t) {
        if constexpr (L > 16) return _mm512_maskz_loadu_ps(lanes(L - 16), t + 16);
        else return _mm512_setzero_ps();
    }
    // The first n lanes (none for n <= 0, all 16 from 16).
    static constexpr __mmask16 lanes(int n) { return n <= 0 ? 0 : n >= 16 ? 0xFFFF : __mmask16((1u << n) - 1); }
    V lookup(I idx) const {
        if constexpr (L <= 16) return _mm512_permutexvar_ps(idx, lo);
        else if constexpr (L == 32) return _mm512_permutex2var_ps(lo, idx, hi);
        else return _mm512_i32gather_ps(idx, data, 4);
    }
    // lookup(idx & Mask), skipping the mask where the permute reads no more
    // index bits than Mask keeps (4 bits up to 16 entries, 5 at 32).
    template <int Mask>
    V lookup_field(I idx) const {
        constexpr int reads = L <= 16 ? 15 : L == 32 ? 31 : -1;
        if constexpr (Mask == reads) return lookup(idx);
        else return lookup(_mm512_and_si512(idx, _mm512_set1_epi32(Mask)));
    }
};

// Level of each lane: the number of boundaries <= u, by binary search over the
// 2^Bits-entry padded boundary table (last entry +inf, never reached).
template <int Bits>
inline I bucketize(V u, const Table<(1 << Bits)>& boundaries) {
    I idx = _mm512_setzero_si512();
    for (int step = (1 << Bits) / 2; step; step >>= 1) {
        const V b = boundaries.lookup(_mm512_add_epi32(idx, _mm512_set1_epi32(step - 1)));
        const __mmask16 ge = _mm512_cmp_ps_mask(u, b, _CMP_GE_OQ);
        idx = _mm512_mask_add_epi32(idx, ge, idx, _mm512_set1_epi32(step));
    }
    return idx;
}

// The level of u >= 0 in the codebook of 2^(Bits+1) levels (its upper half:
// 2^Bits + the count above) in one step where the boundaries' grid is usable
// (level_grid.hpp): a cell per lane, its level and next boundary looked up, one
// compare.  Against the search by halves (3 lookups and 3 compares into masks for 4
// bits, all on port 5 at 512 bits) it takes 2 lookups and 1 compare there.
template <int Bits, const auto& Grid>
inline I upper_level(V u, const Table<(1 << Bits)>& boundaries) {
    constexpr int cells = sizeof Grid.level / sizeof Grid.level[0];
    if constexpr (!Grid.usable) {
        return _mm512_add_epi32(bucketize<Bits>(u, boundaries), _mm512_set1_epi32(1 << Bits));
    } else {
        // u >= 0 and finite: the unsigned min clamps trunc(u k) to the last cell, also
        // where it overflows an int32 (the conversion's 0x80000000).
        const I cell = _mm512_min_epu32(_mm512_cvttps_epi32(_mm512_mul_ps(u, _mm512_set1_ps(Grid.scale))),
                                        _mm512_set1_epi32(cells - 1));
        I level;
        V next;
        if constexpr (cells == 16) {
            level = _mm512_permutexvar_epi32(cell, _mm512_load_si512(Grid.level));
            next = _mm512_permutexvar_ps(cell, _mm512_load_ps(Grid.next));
        } else {
            static_assert(cells == 32);
            level = _mm512_permutex2var_epi32(_mm512_load_si512(Grid.level), cell, _mm512_load_si512(Grid.level + 16));
            next = _mm512_permutex2var_ps(_mm512_load_ps(Grid.next), cell, _mm512_load_ps(Grid.next + 16));
        }
        return _mm512_mask_add_epi32(level, _mm512_cmp_ps_mask(u, next, _CMP_GE_OQ), level, _mm512_set1_epi32(1));
    }
}

// The level of u from j, the number of positive boundaries <= |u| (avx2.hpp's
// mirror): j ^ (2^(Bits-1) - 1), and j ^ 2^(Bits-1) where u >= 0 (-0 too).
template <int Bits>
inline I mirror(I j, V u) {
    constexpr int below = (1 << (Bits - 1)) - 1;
    const I low = _mm512_xor_si512(j, _mm512_set1_epi32(below));
    return _mm512_mask_xor_epi32(low, _mm512_cmp_ps_mask(u, _mm512_setzero_ps(), _CMP_GE_OQ), low,
                                 _mm512_set1_epi32(2 * below + 1));
}

// The level of u from its magnitude's level `upper` (upper_level): upper where
// u >= 0 (-0 too: u + 0 turns it to +0), its mirror image 2^Bits - 1 - upper below,
// with the sign smeared by a shift and one ternary op (mirror's compare goes to port 5).
template <int Bits>
inline I signed_level(I upper, V u) {
    const I negative = _mm512_srai_epi32(_mm512_castps_si512(_mm512_add_ps(u, _mm512_setzero_ps())), 31);
    return _mm512_ternarylogic_epi32(upper, negative, _mm512_set1_epi32((1 << Bits) - 1), 0x28);  // (a ^ b) & c
}

// Levels from packed bytes (docs/packed-format.md).  field: lane i = byte
// p[i - Shift] (0 where that is outside p[0..16)) shifted right by Bit and masked.
template <int Bit, int Mask, int Shift = 0>
inline I field(const uint8_t* p) {
    __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (Shift > 0) bytes = _mm_slli_si128(bytes, Shift);
    if constexpr (Shift < 0) bytes = _mm_srli_si128(bytes, -Shift);
    I x = _mm512_cvtepu8_epi32(bytes);
    if constexpr (Bit != 0) x = _mm512_srli_epi32(x, Bit);
    if constexpr (Mask != 255) x = _mm512_and_si512(x, _mm512_set1_epi32(Mask));
    return x;
}

// small_field: a plane of N < 16 bytes (N divides 16): lane i is field
// First + i/N of byte i%N, W bits wide.
template <int N, int W, int First>
inline I small_field(const uint8_t* p) {
    std::uint64_t word = 0;
    std::memcpy(&word, p, N);
    alignas(16) std::int8_t pattern[16];
    alignas(64) std::int32_t shifts[16];
    for (int i = 0; i < 16; ++i) {
        pattern[i] = static_cast<std::int8_t>(i % N);
        shifts[i] = (First + i / N) * W;
    }
    const __m128i bytes = _mm_shuffle_epi8(_mm_set1_epi64x(static_cast<long long>(word)),
                                           _mm_load_si128(reinterpret_cast<const __m128i*>(pattern)));
    const I x = _mm512_srlv_epi32(_mm512_cvtepu8_epi32(bytes), _mm512_load_si512(shifts));
    return _mm512_and_si512(x, _mm512_set1_epi32((1 << W) - 1));
}

// Lanes whose bit is set in Mask from b, the others from a.
template <unsigned Mask>
inline I blend(I a, I b) { return _mm512_mask_blend_epi32(Mask, a, b); }
template <unsigned Mask>
inline V blend(V a, V b) { return _mm512_mask_blend_ps(Mask, a, b); }

template <int N>
inline I shl(I x) { return _mm512_slli_epi32(x, N); }
template <int N>
inline I shr(I x) { return _mm512_srli_epi32(x, N); }
inline I or_(I a, I b) { return _mm512_or_si512(a, b); }
template <int Mask>
inline I and_(I x) { return _mm512_and_si512(x, _mm512_set1_epi32(Mask)); }

// Low byte of each lane to dst[0..16).
inline void store_bytes(uint8_t* dst, I x) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm512_cvtepi32_epi8(x));
}
// store_bytes of a, b, c and d to dst[0..64), lanes below 256: two packs to words
// and one to bytes leave 128-bit lane q as a's, b's, c's and d's dwords q; one
// permute puts them in order.  4 shuffles on port 5 where 4 store_bytes take 8.
inline void store_bytes4(uint8_t* dst, I a, I b, I c, I d) {
    const I bytes = _mm512_packus_epi16(_mm512_packus_epi32(a, b), _mm512_packus_epi32(c, d));
    const I order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    _mm512_storeu_si512(dst, _mm512_permutexvar_epi32(order, bytes));
}

// A register of 16 dwords from p[0..64) (the dword_lanes unpacking).
inline I load_dwords(const uint8_t* p) { return _mm512_loadu_si512(p); }

// Hint the cache to fetch the line `ahead` bytes after p.  The address is formed
// as an integer: it may lie past the end of the array, which a prefetch never touches.
inline void prefetch(const void* p, std::size_t ahead) {
    _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(p) + ahead), _MM_HINT_T0);
}

// butterfly() on one register's worth of floats in memory.
inline void butterfly_in_memory(float* a, float* b) {
    const V x = load(a), y = load(b);
    store(a, add(x, y));
    store(b, sub(x, y));
}

}  // namespace tq::avx512
