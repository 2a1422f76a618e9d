// Byte lanes of the generated AVX-512 integer score kernels (templates/simd/score_int.cpp.j2):
// 64 bytes per register, 8 windows of generator/int_layout.py.  AVX-512BW looks the
// int8 centroids up (vpshufb per 128-bit lane) and sums products exactly in int32,
// either with VNNI's vpdpbusd (dot_bytes_vnni, where has_vnni()) or with
// vpmaddubsw and vpmaddwd (dot_bytes).  Both give the same integers, as AVX2's do.
#pragma once

#include "isa/avx512.hpp"
#include "isa/avx512_vnni.hpp"
#include "isa/int8.hpp"

#include <cstdint>

namespace tq::avx512 {

constexpr int kByteLanes = 64;
using B = __m512i;  // 64 bytes: levels, int8 centroids or the int8 query
using J = __m512i;  // 16 int32 partial sums

// Two windows, 16 bytes: one load where they are consecutive.
template <int Oa, int Ob>
inline __m128i window_pair(const uint8_t* p) {
    if constexpr (Oa >= 0 && Ob == Oa + 8)
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + Oa));
    else
        return _mm_set_epi64x(int8::window<Ob>(p), int8::window<Oa>(p));
}

// Eight windows, bytes 8w..8w+7 from p + Ow: one load where they are consecutive.
template <int O0, int O1, int O2, int O3, int O4, int O5, int O6, int O7>
inline B load_windows(const uint8_t* p) {
    if constexpr (O0 >= 0 && O1 == O0 + 8 && O2 == O0 + 16 && O3 == O0 + 24 && O4 == O0 + 32 && O5 == O0 + 40 &&
                  O6 == O0 + 48 && O7 == O0 + 56) {
        return _mm512_loadu_si512(p + O0);
    } else {
        B x = _mm512_castsi128_si512((window_pair<O0, O1>(p)));
        x = _mm512_inserti32x4(x, (window_pair<O2, O3>(p)), 1);
        x = _mm512_inserti32x4(x, (window_pair<O4, O5>(p)), 2);
        return _mm512_inserti32x4(x, (window_pair<O6, O7>(p)), 3);
    }
}

// Each byte of window w shifted right by Sw, then masked: the field at bit Sw.
// The shift is of 64-bit lanes: the mask also clears what comes in from the next byte.
template <int Mask, int S0, int S1, int S2, int S3, int S4, int S5, int S6, int S7>
inline B field_bytes(B x) {
    if constexpr (S0 == S1 && S0 == S2 && S0 == S3 && S0 == S4 && S0 == S5 && S0 == S6 && S0 == S7) {
        if constexpr (S0 != 0) x = _mm512_srli_epi64(x, S0);
    } else {
        x = _mm512_srlv_epi64(x, _mm512_setr_epi64(S0, S1, S2, S3, S4, S5, S6, S7));
    }
    return _mm512_and_si512(x, _mm512_set1_epi8(static_cast<char>(Mask)));
}

// Fields below 2^(8 - S) moved up within their bytes.
template <int S>
inline B shl_bytes(B x) { return _mm512_slli_epi16(x, S); }
inline B or_bytes(B a, B b) { return _mm512_or_si512(a, b); }

inline B load_bytes(const std::int8_t* p) { return _mm512_loadu_si512(p); }
// An int8 table of 16 entries in each 128-bit lane (vpshufb looks up within a lane).
struct Table16 {
    B t;
};
// One of 32 entries: entries 0-15 and 16-31, each in every lane.
struct Table32 {
    B low, high;
};
inline B every_lane(const std::int8_t* t) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
}
inline Table16 byte_table(const int8::Table<16>& t) { return {every_lane(t.v)}; }
inline Table32 byte_table(const int8::Table<32>& t) { return {every_lane(t.v), every_lane(t.v + 16)}; }
// Byte k = table[levels_k] (levels < 16).
inline B lookup_bytes(Table16 table, B levels) { return _mm512_shuffle_epi8(table.t, levels); }
// Byte k = table[levels_k] (levels < 32): vpshufb reads bits 0-3 (bit 7 is clear), and
// bit 4 picks the half.
inline B lookup_bytes(const Table32& table, B levels) {
    return _mm512_mask_blend_epi8(_mm512_test_epi8_mask(levels, _mm512_set1_epi8(16)),
                                  _mm512_shuffle_epi8(table.low, levels), _mm512_shuffle_epi8(table.high, levels));
}

// A register of int8 centroids made ready for dot_bytes with any number of queries:
// vpmaddubsw multiplies unsigned by signed bytes, so |c| meets q negated where c < 0
// (AVX-512 has no vpsignb; where c = 0, |c| = 0 makes q's sign moot).
struct Centroids {
    B magnitude;
    __mmask64 negative;
};
inline Centroids prepare(B c) { return {_mm512_abs_epi8(c), _mm512_movepi8_mask(c)}; }
inline B signed_query(const Centroids& c, B q) { return _mm512_mask_sub_epi8(q, c.negative, _mm512_setzero_si512(), q); }

// acc + the products c_k q_k, 4 bytes per int32 lane.  A pair's sum is at most
// 2 · 127 · 127 < 2^15, so vpmaddubsw never saturates.
inline J dot_bytes(J acc, const Centroids& c, B q) {
    const B pairs = _mm512_maddubs_epi16(c.magnitude, signed_query(c, q));
    return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)));
}

// Each key's sums start at zero (q: the query's n bytes, which the VNNI path reads).
inline J start_sums(const std::int8_t*, int) { return _mm512_setzero_si512(); }

// vpdpbusd also multiplies unsigned by signed bytes (4 per int32 lane, no saturation),
// but its path biases the centroids instead of moving their signs: c + 128 in
// [1, 255] (one xor per register) meets q as it is, and each key's sums start at
// -128 Σ_k q_k, which takes the bias back out.  The totals are the same integers
// (|sum| <= 255 · 127 · n < 2^31), for one instruction per register and query
// instead of two.
inline B prepare_vnni(B c) { return _mm512_xor_si512(c, _mm512_set1_epi8(static_cast<char>(0x80))); }
inline J start_sums_vnni(const std::int8_t* q, int n) { return _mm512_maskz_set1_epi32(1, int8::vnni_bias(q, n)); }

TQ_AVX512_VNNI_BEGIN
inline J dot_bytes_vnni(J acc, B c, B q) {
#if TQ_AVX512_VNNI_CODE
    return _mm512_dpbusd_epi32(acc, c, q);
#else
    // Never called (has_vnni() is false), but vpdpbusd's sums all the same:
    // (c + 128) q = c q + 128 q, the second from vpmaddubsw with ones (the xor of
    // prepare_vnni takes its own bias back out).
    const J plain = dot_bytes(acc, prepare(prepare_vnni(c)), q);
    return _mm512_add_epi32(plain, _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_set1_epi8(1), q), _mm512_set1_epi16(128)));
#endif
}
TQ_AVX512_VNNI_END

inline std::int32_t hsum_ints(J x) { return _mm512_reduce_add_epi32(x); }

// Lane k = hsum_ints(s[k]) for 16 registers at once (exact: integers).
inline J hsum_int_lanes(const J* s) {
    V f[16];
    for (int k = 0; k < 16; ++k) f[k] = _mm512_castsi512_ps(s[k]);
    const V sums = transpose_sums(f, [](V a, V b) {
        return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
    });
    return _mm512_castps_si512(sums);
}

inline V to_float(J x) { return _mm512_cvtepi32_ps(x); }

// The integer value sum (templates/simd/accumulate_int.cpp.j2): four values' int8
// centroid registers c0..c3 interleaved so that int32 lane e of out[a] holds the four
// values' bytes of byte lane 16 (e / 4) + 4a + e % 4 (unpacking works per 128-bit lane),
// and one dot per register and query sums weight times centroid over the four values.
inline void interleave4(const B (&c)[4], B (&out)[4]) {
    const B lo01 = _mm512_unpacklo_epi8(c[0], c[1]), hi01 = _mm512_unpackhi_epi8(c[0], c[1]);
    const B lo23 = _mm512_unpacklo_epi8(c[2], c[3]), hi23 = _mm512_unpackhi_epi8(c[2], c[3]);
    out[0] = _mm512_unpacklo_epi16(lo01, lo23);
    out[1] = _mm512_unpackhi_epi16(lo01, lo23);
    out[2] = _mm512_unpacklo_epi16(hi01, hi23);
    out[3] = _mm512_unpackhi_epi16(hi01, hi23);
}
// The four sums' floats (interleave4's order) in the byte register's lane order: v[b]
// holds byte lanes 16b..16b+15, that is the 128-bit lane b of each of the four (a 4 x 4
// transposition of 128-bit lanes).
inline void to_lane_order(V (&v)[4]) {
    const V t0 = _mm512_shuffle_f32x4(v[0], v[1], 0x44), t1 = _mm512_shuffle_f32x4(v[2], v[3], 0x44);
    const V t2 = _mm512_shuffle_f32x4(v[0], v[1], 0xEE), t3 = _mm512_shuffle_f32x4(v[2], v[3], 0xEE);
    v[0] = _mm512_shuffle_f32x4(t0, t1, 0x88);
    v[1] = _mm512_shuffle_f32x4(t0, t1, 0xDD);
    v[2] = _mm512_shuffle_f32x4(t2, t3, 0x88);
    v[3] = _mm512_shuffle_f32x4(t2, t3, 0xDD);
}
// Four weight bytes (one per value) in every int32 lane.
inline B weight_bytes(std::uint32_t four) { return _mm512_set1_epi32(static_cast<int>(four)); }
inline J zero_sums() { return _mm512_setzero_si512(); }
inline J add_sums(J a, J b) { return _mm512_add_epi32(a, b); }
// a k + b per int32 lane, wrapping (the score's residual: only the lanes' total must fit).
inline J mul_add_sums(J a, int k, J b) { return _mm512_add_epi32(_mm512_mullo_epi32(a, _mm512_set1_epi32(k)), b); }
// Without VNNI the weights are biased to signed bytes (U - 127, int8.hpp) and meet the
// centroids as dot_bytes' queries; with it, vpdpbusd takes them as unsigned bytes.
inline J value_dot(J acc, const Centroids& c, B w) { return dot_bytes(acc, c, w); }
TQ_AVX512_VNNI_BEGIN
inline J value_dot_vnni(J acc, B c, B w) {
#if TQ_AVX512_VNNI_CODE
    return _mm512_dpbusd_epi32(acc, w, c);
#else
    // Never called (has_vnni() is false), but the same sums: (w - 127) c + 127 c, w - 127
    // within a signed byte as on the plain path (w <= 254).
    const B biased = _mm512_sub_epi8(w, _mm512_set1_epi8(127));
    return _mm512_add_epi32(dot_bytes(acc, prepare(c), biased),
                            _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_set1_epi8(1), c), _mm512_set1_epi16(127)));
#endif
}
TQ_AVX512_VNNI_END
inline B prepare_values_vnni(B c) { return c; }
inline Centroids prepare_values(B c) { return prepare(c); }
constexpr int kWeightBias = 127, kWeightBias_vnni = 0;

}  // namespace tq::avx512
