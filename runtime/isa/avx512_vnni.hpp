// Whether the AVX-512 integer score kernels run VNNI's vpdpbusd (avx512_bytes.hpp),
// apart from the rest of AVX-512's vocabulary so that code compiled without AVX-512
// flags (tests/test_cross_isa.cpp) can ask.
#pragma once

#include "isa/int8.hpp"

namespace tq::avx512 {

// Where vpdpbusd is compiled: everywhere when the build targets VNNI, else with GCC
// in the functions between TQ_AVX512_VNNI_BEGIN and _END, chosen at run time (as
// neon_bytes.hpp's sdot); with other compilers the kernels keep dot_bytes.  Emulated
// (avx512_emulated.hpp), SIMDe provides it.
#if defined(__AVX512VNNI__) || TQ_EMULATED_AVX512
#define TQ_AVX512_VNNI_CODE 1
#define TQ_AVX512_VNNI_BEGIN
#define TQ_AVX512_VNNI_END
#elif defined(__GNUC__) && !defined(__clang__)
#define TQ_AVX512_VNNI_CODE 1
#define TQ_AVX512_VNNI_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx512vnni\")")
#define TQ_AVX512_VNNI_END _Pragma("GCC pop_options")
#else
#define TQ_AVX512_VNNI_CODE 0
#define TQ_AVX512_VNNI_BEGIN
#define TQ_AVX512_VNNI_END
#endif

// Whether the kernels run vpdpbusd here: where the CPU has VNNI (emulated: always)
// and TQ_BYTE_DOT is not plain (int8.hpp).  Static, as plain_byte_dot.
static inline bool has_vnni() {
#if TQ_EMULATED_AVX512 || defined(__AVX512VNNI__)
    return !int8::plain_byte_dot();
#elif TQ_AVX512_VNNI_CODE
    static const bool yes = (__builtin_cpu_init(), __builtin_cpu_supports("avx512vnni"));
    return yes && !int8::plain_byte_dot();
#else
    return false;
#endif
}

}  // namespace tq::avx512
