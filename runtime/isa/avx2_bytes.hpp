// Byte lanes of the generated AVX2 integer score kernels (templates/simd/score_int.cpp.j2):
// one level or int8 centroid per byte, products summed exactly in int32.
#pragma once

#include "isa/avx2.hpp"
#include "isa/avx2_vnni.hpp"
#include "isa/int8.hpp"

#include <cstdint>

namespace tq::avx2 {

constexpr int kByteLanes = 32;
using B = __m256i;  // 32 bytes: levels, int8 centroids or the int8 query
using J = __m256i;  // 8 int32 partial sums

// Four windows, bytes 8w..8w+7 from p + Ow: one load where they are consecutive.
template <int O0, int O1, int O2, int O3>
inline B load_windows(const uint8_t* p) {
    if constexpr (O0 >= 0 && O1 == O0 + 8 && O2 == O0 + 16 && O3 == O0 + 24) {
        return _mm256_loadu_si256(reinterpret_cast<const B*>(p + O0));
    } else if constexpr (O0 >= 0 && O1 == O0 + 8 && O2 >= 0 && O3 == O2 + 8) {
        const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + O0));
        const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + O2));
        return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    } else {
        return _mm256_setr_epi64x(int8::window<O0>(p), int8::window<O1>(p), int8::window<O2>(p), int8::window<O3>(p));
    }
}

// Each byte of window w shifted right by Sw, then masked: the field at bit Sw.
// The shift is of 64-bit lanes: the mask also clears what comes in from the next byte.
template <int Mask, int S0, int S1, int S2, int S3>
inline B field_bytes(B x) {
    if constexpr (S0 == S1 && S1 == S2 && S2 == S3) {
        if constexpr (S0 != 0) x = _mm256_srli_epi64(x, S0);
    } else {
        x = _mm256_srlv_epi64(x, _mm256_setr_epi64x(S0, S1, S2, S3));
    }
    return _mm256_and_si256(x, _mm256_set1_epi8(static_cast<char>(Mask)));
}

// Fields below 2^(8 - S) moved up within their bytes.
template <int S>
inline B shl_bytes(B x) { return _mm256_slli_epi16(x, S); }
inline B or_bytes(B a, B b) { return _mm256_or_si256(a, b); }

inline B load_bytes(const std::int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const B*>(p)); }
// An int8 table of 16 entries, in both 128-bit halves (vpshufb looks up within a half).
struct Table16 {
    B t;
};
// One of 32 entries: entries 0-15 and 16-31, each in both halves.
struct Table32 {
    B low, high;
};
inline B both_halves(const std::int8_t* t) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
}
inline Table16 byte_table(const int8::Table<16>& t) { return {both_halves(t.v)}; }
inline Table32 byte_table(const int8::Table<32>& t) { return {both_halves(t.v), both_halves(t.v + 16)}; }
// Byte k = table[levels_k] (levels < 16).
inline B lookup_bytes(Table16 table, B levels) { return _mm256_shuffle_epi8(table.t, levels); }
// Byte k = table[levels_k] (levels < 32): vpshufb reads bits 0-3 (bit 7 is clear), and
// bit 4, shifted to bit 7 of its byte (a 16-bit shift by 3 moves no other byte's bit
// there), picks the half.
inline B lookup_bytes(const Table32& table, B levels) {
    return _mm256_blendv_epi8(_mm256_shuffle_epi8(table.low, levels), _mm256_shuffle_epi8(table.high, levels),
                              _mm256_slli_epi16(levels, 3));
}

// A register of int8 centroids made ready for dot_bytes with any number of queries:
// vpmaddubsw multiplies unsigned by signed bytes, so |c| meets q with c's sign.
struct Centroids {
    B magnitude, value;
};
inline Centroids prepare(B c) { return {_mm256_abs_epi8(c), c}; }

// acc + the products c_k q_k, 4 bytes per int32 lane.  A pair's sum is at most
// 2 · 127 · 127 < 2^15, so vpmaddubsw never saturates.
inline J dot_bytes(J acc, const Centroids& c, B q) {
    const B pairs = _mm256_maddubs_epi16(c.magnitude, _mm256_sign_epi8(q, c.value));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

// Each key's sums start at zero (q: the query's n bytes, which the VNNI path reads).
inline J start_sums(const std::int8_t*, int) { return _mm256_setzero_si256(); }

// AVX-VNNI's vpdpbusd multiplies unsigned by signed bytes with no int16 pairs to
// saturate, so its path biases the centroids instead of moving their signs (as
// avx512_bytes.hpp's): c + 128 in [1, 255] meets q as it is, and each key's sums start
// at -128 Σ_k q_k.  The same integers, one instruction per register and query instead
// of three.
inline B prepare_vnni(B c) { return _mm256_xor_si256(c, _mm256_set1_epi8(static_cast<char>(0x80))); }
inline J start_sums_vnni(const std::int8_t* q, int n) {
    return _mm256_setr_epi32(int8::vnni_bias(q, n), 0, 0, 0, 0, 0, 0, 0);
}

TQ_AVX2_VNNI_BEGIN
inline J dot_bytes_vnni(J acc, B c, B q) {
#if TQ_AVX2_VNNI_CODE
    return _mm256_dpbusd_avx_epi32(acc, c, q);
#else
    // Never called (has_vnni() is false), but vpdpbusd's sums all the same:
    // (c + 128) q = c q + 128 q, the second from vpmaddubsw with ones (the xor of
    // prepare_vnni takes its own bias back out).
    const J plain = dot_bytes(acc, prepare(prepare_vnni(c)), q);
    return _mm256_add_epi32(plain, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), q), _mm256_set1_epi16(128)));
#endif
}
TQ_AVX2_VNNI_END

inline std::int32_t hsum_ints(J x) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// Lane k = hsum_ints(s[k]) for 8 registers at once (exact: integers).
inline J hsum_int_lanes(const J* s) {
    const J u0 = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
    const J u1 = _mm256_hadd_epi32(_mm256_hadd_epi32(s[4], s[5]), _mm256_hadd_epi32(s[6], s[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

inline V to_float(J x) { return _mm256_cvtepi32_ps(x); }

// The integer value sum (templates/simd/accumulate_int.cpp.j2): four values' int8
// centroid registers c0..c3 interleaved so that int32 lane e of out[a] holds the four
// values' bytes of byte lane 16 (e / 4) + 4a + e % 4 (unpacking works per 128-bit lane),
// and one dot per register and query sums weight times centroid over the four values.
inline void interleave4(const B (&c)[4], B (&out)[4]) {
    const B lo01 = _mm256_unpacklo_epi8(c[0], c[1]), hi01 = _mm256_unpackhi_epi8(c[0], c[1]);
    const B lo23 = _mm256_unpacklo_epi8(c[2], c[3]), hi23 = _mm256_unpackhi_epi8(c[2], c[3]);
    out[0] = _mm256_unpacklo_epi16(lo01, lo23);
    out[1] = _mm256_unpackhi_epi16(lo01, lo23);
    out[2] = _mm256_unpacklo_epi16(hi01, hi23);
    out[3] = _mm256_unpackhi_epi16(hi01, hi23);
}
// The four sums' floats (interleave4's order) in the byte register's lane order: v[b]
// holds byte lanes 8b..8b+7, the 128-bit lane b / 2 of sums 2 (b % 2) and 2 (b % 2) + 1.
inline void to_lane_order(V (&v)[4]) {
    const V s0 = v[0], s1 = v[1], s2 = v[2], s3 = v[3];
    v[0] = _mm256_permute2f128_ps(s0, s1, 0x20);
    v[1] = _mm256_permute2f128_ps(s2, s3, 0x20);
    v[2] = _mm256_permute2f128_ps(s0, s1, 0x31);
    v[3] = _mm256_permute2f128_ps(s2, s3, 0x31);
}
// Four weight bytes (one per value) in every int32 lane.
inline B weight_bytes(std::uint32_t four) { return _mm256_set1_epi32(static_cast<int>(four)); }
inline J zero_sums() { return _mm256_setzero_si256(); }
inline J add_sums(J a, J b) { return _mm256_add_epi32(a, b); }
// a k + b per int32 lane, wrapping (the score's residual: only the lanes' total must fit).
inline J mul_add_sums(J a, int k, J b) { return _mm256_add_epi32(_mm256_mullo_epi32(a, _mm256_set1_epi32(k)), b); }
// Without VNNI the weights are biased to signed bytes (U - 127, int8.hpp) and meet the
// centroids as dot_bytes' queries; with it, vpdpbusd takes them as unsigned bytes.
inline J value_dot(J acc, const Centroids& c, B w) { return dot_bytes(acc, c, w); }
TQ_AVX2_VNNI_BEGIN
inline J value_dot_vnni(J acc, B c, B w) {
#if TQ_AVX2_VNNI_CODE
    return _mm256_dpbusd_avx_epi32(acc, w, c);
#else
    // Never called (has_vnni() is false), but the same sums: (w - 127) c + 127 c, w - 127
    // within a signed byte as on the plain path (w <= 254).
    const B biased = _mm256_sub_epi8(w, _mm256_set1_epi8(127));
    return _mm256_add_epi32(dot_bytes(acc, prepare(c), biased),
                            _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), c), _mm256_set1_epi16(127)));
#endif
}
TQ_AVX2_VNNI_END
inline B prepare_values_vnni(B c) { return c; }
inline Centroids prepare_values(B c) { return prepare(c); }
constexpr int kWeightBias = 127, kWeightBias_vnni = 0;

}  // namespace tq::avx2
