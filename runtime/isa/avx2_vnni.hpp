// Whether the AVX2 integer score kernels run AVX-VNNI's vpdpbusd on 256-bit registers
// (avx2_bytes.hpp: Alder Lake, Sapphire Rapids, Zen 5 and later), apart from the rest of
// AVX2's vocabulary so that code compiled without AVX2 flags (tests/test_cross_isa.cpp)
// can ask.
#pragma once

#include "isa/int8.hpp"

namespace tq::avx2 {

// Where vpdpbusd (VEX) is compiled: everywhere when the build targets AVX-VNNI, else
// with GCC in the functions between TQ_AVX2_VNNI_BEGIN and _END, chosen at run time (as
// avx512_vnni.hpp); with other compilers the kernels keep dot_bytes.
#if defined(__AVXVNNI__)
#define TQ_AVX2_VNNI_CODE 1
#define TQ_AVX2_VNNI_BEGIN
#define TQ_AVX2_VNNI_END
#elif defined(__GNUC__) && !defined(__clang__)
#define TQ_AVX2_VNNI_CODE 1
#define TQ_AVX2_VNNI_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avxvnni\")")
#define TQ_AVX2_VNNI_END _Pragma("GCC pop_options")
#else
#define TQ_AVX2_VNNI_CODE 0
#define TQ_AVX2_VNNI_BEGIN
#define TQ_AVX2_VNNI_END
#endif

// Whether the kernels run vpdpbusd here: where the CPU has AVX-VNNI and TQ_BYTE_DOT is
// not plain (int8.hpp).  Static, as plain_byte_dot.
static inline bool has_vnni() {
#if defined(__AVXVNNI__)
    return !int8::plain_byte_dot();
#elif TQ_AVX2_VNNI_CODE
    static const bool yes = (__builtin_cpu_init(), __builtin_cpu_supports("avxvnni"));
    return yes && !int8::plain_byte_dot();
#else
    return false;
#endif
}

}  // namespace tq::avx2
