// Building blocks of the generated AVX2 kernels (compiled with -mavx2 -mfma).
// The same names exist in avx512.hpp: one template (templates/simd/) serves both.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tq::avx2 {

constexpr int kLanes = 8;
using V = __m256;   // 8 floats
using I = __m256i;  // 8 int32 levels

inline V load(const float* p) { return _mm256_loadu_ps(p); }
inline void store(float* p, V x) { _mm256_storeu_ps(p, x); }
// Lane w = base[idx[w]]: a permutation into the kernels' lane order (kLaneCoord), once
// per call, one gather per register instead of a scalar move per coordinate.
inline V gather(const float* base, const int* idx) {
    return _mm256_i32gather_ps(base, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx)), 4);
}
// base[idx[w]] = lane w: gather's inverse (AVX2 has no scatter: through memory).
inline void scatter(float* base, const int* idx, V x) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, x);
    for (int w = 0; w < 8; ++w) base[idx[w]] = lanes[w];
}
inline V zero() { return _mm256_setzero_ps(); }
inline V set1(float x) { return _mm256_set1_ps(x); }
inline V add(V a, V b) { return _mm256_add_ps(a, b); }
inline V sub(V a, V b) { return _mm256_sub_ps(a, b); }
inline V mul(V a, V b) { return _mm256_mul_ps(a, b); }
inline V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
// ((x0+x1) + (x2+x3)) + ((x4+x5) + (x6+x7)): the order hsum_lanes adds in, so a
// key's score does not depend on whether it was reduced alone or in a batch.
inline float hsum(V x) {
    const V u = _mm256_hadd_ps(_mm256_hadd_ps(x, x), _mm256_hadd_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1)));
}

// Lane j = hsum(s[j]) for 8 registers at once (horizontal adds, then the halves).
inline V hsum_lanes(const V* s) {
    const V u0 = _mm256_hadd_ps(_mm256_hadd_ps(s[0], s[1]), _mm256_hadd_ps(s[2], s[3]));
    const V u1 = _mm256_hadd_ps(_mm256_hadd_ps(s[4], s[5]), _mm256_hadd_ps(s[6], s[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// The first Stages FWHT stages (butterflies 1, 2, 4 apart) inside one register,
// in the scalar kernels' order and roundings: lane i becomes x_i + x_{i^s}
// (bit s of i clear) or x_{i^s} - x_i (bit s set).
template <int Stages = 3>
inline V fwht_lanes(V x) {
    const V s1 = _mm256_setr_ps(1, -1, 1, -1, 1, -1, 1, -1);
    const V s2 = _mm256_setr_ps(1, 1, -1, -1, 1, 1, -1, -1);
    const V s4 = _mm256_setr_ps(1, 1, 1, 1, -1, -1, -1, -1);
    if constexpr (Stages >= 1) x = _mm256_fmadd_ps(x, s1, _mm256_permute_ps(x, 0xB1));
    if constexpr (Stages >= 2) x = _mm256_fmadd_ps(x, s2, _mm256_permute_ps(x, 0x4E));
    if constexpr (Stages >= 3) x = _mm256_fmadd_ps(x, s4, _mm256_permute2f128_ps(x, x, 0x01));
    return x;
}

// The dense Hadamard stages (generator/hadamard.py) on blocks of S = 4 lanes:
// block Slot of x copied into both blocks, and the lanes of the blocks whose bit
// is set in Neg negated (exactly: a sign flip).
template <int S, int Slot>
inline V broadcast_block(V x) {
    static_assert(S == 4);
    return _mm256_permute2f128_ps(x, x, Slot ? 0x11 : 0x00);
}
template <int S, unsigned Neg>
inline V negate_blocks(V x) {
    constexpr auto bit = [](int lane) { return (Neg >> (lane / S)) & 1 ? int(0x80000000u) : 0; };
    const I m = _mm256_setr_epi32(bit(0), bit(1), bit(2), bit(3), bit(4), bit(5), bit(6), bit(7));
    return _mm256_xor_ps(x, _mm256_castsi256_ps(m));
}
inline V neg(V x) { return _mm256_xor_ps(x, _mm256_set1_ps(-0.0f)); }

inline void butterfly(V& a, V& b) {
    const V t = _mm256_add_ps(a, b);
    b = _mm256_sub_ps(a, b);
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

inline V abs_(V x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }

// A table of L floats for per-lane lookup by level: registers up to 32 entries (a
// permute per 8, blends on bits 3 and 4 of the level), a gather from memory beyond,
// or for 8-bit levels one code byte at a time from memory (lookup_code_bytes).  On Zen 3
// the 32-entry lookup's 4 permutes and 3 blends take 0.65x a gather's time.
template <int L>
struct Table {
    static constexpr int kRegs = L <= 8 ? 1 : L <= 32 ? L / 8 : 0;  // 0: looked up from memory
    const float* data;
    V reg[kRegs > 0 ? kRegs : 1] = {};
    explicit Table(const float* t) : data(t) {
        if constexpr (L < 8) {
            alignas(32) float pad[8] = {};
            std::memcpy(pad, t, sizeof(float) * L);
            reg[0] = _mm256_load_ps(pad);
        } else {
            for (int k = 0; k < kRegs; ++k) reg[k] = _mm256_loadu_ps(t + 8 * k);
        }
    }
    V lookup(I idx) const {
        if constexpr (kRegs == 1) {
            return _mm256_permutevar8x32_ps(reg[0], idx);
        } else if constexpr (kRegs > 1) {
            const auto entries = [&](int k) { return _mm256_permutevar8x32_ps(reg[k], idx); };
            const V bit3 = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));
            V v = _mm256_blendv_ps(entries(0), entries(1), bit3);
            if constexpr (kRegs == 4)
                v = _mm256_blendv_ps(v, _mm256_blendv_ps(entries(2), entries(3), bit3),
                                     _mm256_castsi256_ps(_mm256_slli_epi32(idx, 27)));
            return v;
        } else {
            return _mm256_i32gather_ps(data, idx, 4);
        }
    }
    // The entries of the code bytes p[0], p[Stride], ..., p[7 Stride], one level each
    // (L = 256): a byte load and a table load inserted per lane.  Zen 3 runs these 8
    // lanes in about 8 cycles where widening the bytes and gathering takes about 14
    // (docs/kernels.md, "8-bit lookups").
    template <int Stride>
    V lookup_code_bytes(const uint8_t* p) const {
        static_assert(L == 256, "a code byte is a level");
        const auto entry = [&](int lane) {
            int bits;
            std::memcpy(&bits, data + p[lane * Stride], sizeof bits);
            return bits;
        };
        __m128i lanes03 = _mm_cvtsi32_si128(entry(0)), lanes47 = _mm_cvtsi32_si128(entry(4));
        lanes03 = _mm_insert_epi32(lanes03, entry(1), 1);
        lanes47 = _mm_insert_epi32(lanes47, entry(5), 1);
        lanes03 = _mm_insert_epi32(lanes03, entry(2), 2);
        lanes47 = _mm_insert_epi32(lanes47, entry(6), 2);
        lanes03 = _mm_insert_epi32(lanes03, entry(3), 3);
        lanes47 = _mm_insert_epi32(lanes47, entry(7), 3);
        return _mm256_castsi256_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(lanes03), lanes47, 1));
    }
    // lookup(idx & Mask), skipping the mask where the permutes read no more
    // index bits than Mask keeps (3 bits up to 8 entries, 4 at 16, 5 at 32).
    template <int Mask>
    V lookup_field(I idx) const {
        constexpr int reads = kRegs == 0 ? -1 : 8 * kRegs - 1;
        if constexpr (Mask == reads) return lookup(idx);
        else return lookup(_mm256_and_si256(idx, _mm256_set1_epi32(Mask)));
    }
};

// One step of bucketize: p holds each lane's leading T level bits, and its next
// boundary is b[(2p + 1) 2^(Bits-T-1) - 1].  Step T has 2^T candidates: up to 8 in one
// permute of a register of them, 16 in two and a blend, more in a gather.
template <int Bits, int T>
inline I search_step(V u, I p, const float* b) {
    constexpr int s = 1 << (Bits - T - 1);
    V bound;
    if constexpr (T == 0) {
        bound = _mm256_set1_ps(b[s - 1]);
    } else if constexpr (T <= 4) {
        alignas(32) float c[16] = {};
        for (int k = 0; k < (1 << T); ++k) c[k] = b[(2 * k + 1) * s - 1];
        bound = _mm256_permutevar8x32_ps(_mm256_load_ps(c), p);
        if constexpr (T == 4)
            bound = _mm256_blendv_ps(bound, _mm256_permutevar8x32_ps(_mm256_load_ps(c + 8), p),
                                     _mm256_castsi256_ps(_mm256_slli_epi32(p, 28)));
    } else {
        bound = _mm256_i32gather_ps(b + s - 1, _mm256_slli_epi32(p, Bits - T), 4);
    }
    const I ge = _mm256_castps_si256(_mm256_cmp_ps(u, bound, _CMP_GE_OQ));
    return _mm256_sub_epi32(_mm256_add_epi32(p, p), ge);  // 2p + (u >= bound)
}

// The level of each lane: the number of boundaries <= u, by binary search from the top
// bit (the same compares as scalar.hpp's quantize8, so the same levels).
template <int Bits, int T = 0>
inline I bucketize(V u, const Table<(1 << Bits)>& boundaries, I p = _mm256_setzero_si256()) {
    if constexpr (T == Bits) {
        return p;
    } else {
        return bucketize<Bits, T + 1>(u, boundaries, search_step<Bits, T>(u, p, boundaries.data));
    }
}

// The level of u from j, the number of positive boundaries <= |u| (a bucketize of
// |u| over the upper half of the boundaries): 2^(Bits-1) + j where u >= 0 (-0 too),
// else 2^(Bits-1) - 1 - j.  As j < 2^(Bits-1): j ^ (2^(Bits-1) - 1 - mask).
template <int Bits>
inline I mirror(I j, V u) {
    const I ge = _mm256_castps_si256(_mm256_cmp_ps(u, _mm256_setzero_ps(), _CMP_GE_OQ));
    return _mm256_xor_si256(j, _mm256_sub_epi32(_mm256_set1_epi32((1 << (Bits - 1)) - 1), ge));
}

// Lane i = byte p[i - Shift] (0 where that is outside p[0..8)) shifted right by Bit and masked.
template <int Bit, int Mask, int Shift = 0>
inline I field(const uint8_t* p) {
    __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    if constexpr (Shift > 0) bytes = _mm_slli_epi64(bytes, 8 * Shift);
    if constexpr (Shift < 0) bytes = _mm_srli_epi64(bytes, -8 * Shift);
    I x = _mm256_cvtepu8_epi32(bytes);
    if constexpr (Bit != 0) x = _mm256_srli_epi32(x, Bit);
    if constexpr (Mask != 255) x = _mm256_and_si256(x, _mm256_set1_epi32(Mask));
    return x;
}

template <int N, int W, int First>
inline I small_field(const uint8_t* p) {
    std::uint64_t word = 0;
    std::memcpy(&word, p, N);
    alignas(16) std::int8_t pattern[16];
    alignas(32) std::int32_t shifts[8];
    for (int i = 0; i < 16; ++i) pattern[i] = static_cast<std::int8_t>(i % N);
    for (int i = 0; i < 8; ++i) shifts[i] = (First + i / N) * W;
    const __m128i bytes = _mm_shuffle_epi8(_mm_set1_epi64x(static_cast<long long>(word)),
                                           _mm_load_si128(reinterpret_cast<const __m128i*>(pattern)));
    const I x = _mm256_srlv_epi32(_mm256_cvtepu8_epi32(bytes), _mm256_load_si256(reinterpret_cast<const I*>(shifts)));
    return _mm256_and_si256(x, _mm256_set1_epi32((1 << W) - 1));
}

// Lanes whose bit is set in Mask from b, the others from a.
template <unsigned Mask>
inline I blend(I a, I b) { return _mm256_blend_epi32(a, b, Mask); }
template <unsigned Mask>
inline V blend(V a, V b) { return _mm256_blend_ps(a, b, Mask); }

template <int N>
inline I shl(I x) { return _mm256_slli_epi32(x, N); }
template <int N>
inline I shr(I x) { return _mm256_srli_epi32(x, N); }
inline I or_(I a, I b) { return _mm256_or_si256(a, b); }
template <int Mask>
inline I and_(I x) { return _mm256_and_si256(x, _mm256_set1_epi32(Mask)); }

// Low byte of each lane to dst[0..8).
inline void store_bytes(uint8_t* dst, I x) {
    const I pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,  //
                                    0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const I b = _mm256_shuffle_epi8(x, pick);
    const __m128i packed = _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), packed);
}

// store_bytes of a, b, c and d to dst[0..32), lanes below 256: two packs to words
// and one to bytes leave 128-bit lane q as a's, b's, c's and d's dwords q; one
// permute puts them in order.  4 shuffles where 4 store_bytes take 12.
inline void store_bytes4(uint8_t* dst, I a, I b, I c, I d) {
    const I bytes = _mm256_packus_epi16(_mm256_packus_epi32(a, b), _mm256_packus_epi32(c, d));
    const I order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(reinterpret_cast<I*>(dst), _mm256_permutevar8x32_epi32(bytes, order));
}

// A register of 8 dwords from p[0..32) (the dword_lanes unpacking).
inline I load_dwords(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const I*>(p)); }

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

}  // namespace tq::avx2
