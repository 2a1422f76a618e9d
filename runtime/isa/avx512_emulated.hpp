// AVX-512's intrinsics in software, so that the AVX-512 kernels are tested on CPUs
// without it (TQ_EMULATED_ISAS=avx512, the avx512-emulated preset; generator/isas.py
// Emulation).  SIMDe implements them on AVX2, under the intrinsics' own names
// (SIMDE_ENABLE_NATIVE_ALIASES); the few that Debian 12's SIMDe (0.7.4) lacks are
// defined below, lane by lane, as Intel's intrinsics guide defines them, and one
// alias it misspells is corrected.  Testing only: emulated kernels are several times
// slower than AVX2's.
#pragma once

#include <immintrin.h>  // first: the aliases below must not rename its declarations
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include <cstdint>

namespace tq::avx512_emulated {

inline float reduce_add_ps(simde__m512 x) {  // pairs as GCC's: halves, quarters, then lanes 0+2, 1+3
    alignas(64) float a[16];
    simde_mm512_store_ps(a, x);
    float h[8], q[4];
    for (int i = 0; i < 8; ++i) h[i] = a[i] + a[i + 8];
    for (int i = 0; i < 4; ++i) q[i] = h[i] + h[i + 4];
    return (q[0] + q[2]) + (q[1] + q[3]);
}

inline simde__m512 permute_ps(simde__m512 x, int imm) {  // within each 128-bit lane
    alignas(64) float a[16], r[16];
    simde_mm512_store_ps(a, x);
    for (int i = 0; i < 16; ++i) r[i] = a[(i & ~3) + ((imm >> (2 * (i & 3))) & 3)];
    return simde_mm512_load_ps(r);
}

inline simde__m128i cvtepi32_epi8(simde__m512i x) {  // truncating
    alignas(64) std::int32_t a[16];
    alignas(16) std::int8_t r[16];
    simde_mm512_store_si512(a, x);
    for (int i = 0; i < 16; ++i) r[i] = static_cast<std::int8_t>(a[i]);
    return simde_mm_load_si128(reinterpret_cast<const simde__m128i*>(r));
}

inline simde__m512i cvtepu8_epi32(simde__m128i x) {
    alignas(16) std::uint8_t a[16];
    alignas(64) std::int32_t r[16];
    simde_mm_store_si128(reinterpret_cast<simde__m128i*>(a), x);
    for (int i = 0; i < 16; ++i) r[i] = a[i];
    return simde_mm512_load_si512(r);
}

inline simde__m512 i32gather_ps(simde__m512i index, const void* base, int scale) {
    alignas(64) std::int32_t k[16];
    alignas(64) float r[16];
    simde_mm512_store_si512(k, index);
    for (int i = 0; i < 16; ++i)
        r[i] = *reinterpret_cast<const float*>(static_cast<const char*>(base) + std::intptr_t(k[i]) * scale);
    return simde_mm512_load_ps(r);
}

inline void i32scatter_ps(void* base, simde__m512i index, simde__m512 x, int scale) {  // lanes in order
    alignas(64) std::int32_t k[16];
    alignas(64) float v[16];
    simde_mm512_store_si512(k, index);
    simde_mm512_store_ps(v, x);
    for (int i = 0; i < 16; ++i) *reinterpret_cast<float*>(static_cast<char*>(base) + std::intptr_t(k[i]) * scale) = v[i];
}

inline std::int32_t reduce_add_epi32(simde__m512i x) {
    alignas(64) std::int32_t a[16];
    simde_mm512_store_si512(a, x);
    std::uint32_t sum = 0;  // wraps as the instructions do
    for (int i = 0; i < 16; ++i) sum += static_cast<std::uint32_t>(a[i]);
    return static_cast<std::int32_t>(sum);
}

inline simde__m512 maskz_loadu_ps(simde__mmask16 k, const void* p) {  // reads only the lanes in k
    alignas(64) float r[16] = {};
    for (int i = 0; i < 16; ++i)
        if (k >> i & 1) r[i] = static_cast<const float*>(p)[i];
    return simde_mm512_load_ps(r);
}

inline simde__m512 cvtepi32_ps(simde__m512i x) {  // round to nearest even, as MXCSR's default
    alignas(64) std::int32_t a[16];
    alignas(64) float r[16];
    simde_mm512_store_si512(a, x);
    for (int i = 0; i < 16; ++i) r[i] = static_cast<float>(a[i]);
    return simde_mm512_load_ps(r);
}

inline simde__m512i cvttps_epi32(simde__m512 x) {  // truncating; NaN and out of range: 0x80000000
    alignas(64) float a[16];
    alignas(64) std::int32_t r[16];
    simde_mm512_store_ps(a, x);
    for (int i = 0; i < 16; ++i)
        r[i] = a[i] > -2147483904.0f && a[i] < 2147483648.0f ? static_cast<std::int32_t>(a[i]) : INT32_MIN;
    return simde_mm512_load_si512(r);
}

inline simde__m512i srai_epi32(simde__m512i x, unsigned n) {  // the sign bit fills (C++20's >>); SIMDe 0.7.4 lacks it
    alignas(64) std::int32_t a[16];
    simde_mm512_store_si512(a, x);
    for (int i = 0; i < 16; ++i) a[i] >>= n > 31 ? 31 : n;
    return simde_mm512_load_si512(a);
}

}  // namespace tq::avx512_emulated

// The aliases, each after an #undef: GCC defines some of these names as macros at -O0.
#undef _mm512_reduce_add_ps
#define _mm512_reduce_add_ps(x) tq::avx512_emulated::reduce_add_ps(x)
#undef _mm512_permute_ps
#define _mm512_permute_ps(x, imm) tq::avx512_emulated::permute_ps(x, imm)
#undef _mm512_cvtepi32_epi8
#define _mm512_cvtepi32_epi8(x) tq::avx512_emulated::cvtepi32_epi8(x)
#undef _mm512_cvtepu8_epi32
#define _mm512_cvtepu8_epi32(x) tq::avx512_emulated::cvtepu8_epi32(x)
#undef _mm512_i32gather_ps
#define _mm512_i32gather_ps(index, base, scale) tq::avx512_emulated::i32gather_ps(index, base, scale)
#undef _mm512_i32scatter_ps
#define _mm512_i32scatter_ps(base, index, x, scale) tq::avx512_emulated::i32scatter_ps(base, index, x, scale)
#undef _mm512_reduce_add_epi32
#define _mm512_reduce_add_epi32(x) tq::avx512_emulated::reduce_add_epi32(x)
#undef _mm512_cvtepi32_ps
#define _mm512_cvtepi32_ps(x) tq::avx512_emulated::cvtepi32_ps(x)
#undef _mm512_cvttps_epi32
#define _mm512_cvttps_epi32(x) tq::avx512_emulated::cvttps_epi32(x)
#undef _mm512_srai_epi32
#define _mm512_srai_epi32(x, n) tq::avx512_emulated::srai_epi32(x, n)
#undef _mm512_maskz_loadu_ps
#define _mm512_maskz_loadu_ps(k, p) tq::avx512_emulated::maskz_loadu_ps(k, p)
#undef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4(a, b, imm) simde_mm512_shuffle_f32x4(a, b, imm)
#undef _mm512_madd_epi16  // 0.7.4 aliases it with the masked form's four arguments
#define _mm512_madd_epi16(a, b) simde_mm512_madd_epi16(a, b)
