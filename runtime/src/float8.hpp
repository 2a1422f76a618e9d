// Eight floats as one vector of the compiler's (GCC and clang vector extensions: two
// SSE or NEON registers, one AVX register), for plain C++ that softmax.cpp and
// attend_ops.cpp compile once per ISA.
#pragma once

#include <cstdint>
#include <cstring>

namespace tq::detail {

typedef float F8 __attribute__((vector_size(32)));
typedef std::int32_t I8 __attribute__((vector_size(32)));  // a comparison's lane masks

// v = p[0 .. 8), unaligned.  (Through a reference: a 32-byte vector returned by value
// changes the ABI without AVX.)
[[gnu::always_inline]] inline void load8(F8& v, const float* p) { std::memcpy(&v, p, sizeof v); }

}  // namespace tq::detail
