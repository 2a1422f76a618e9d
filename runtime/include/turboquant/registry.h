/* The kernel registry and rotation signs: the C entry points.
 *
 * Every function returns a tq_status; on failure a one-line message is
 * available from tq_last_error() on the same thread, and outputs are unchanged.
 */
#ifndef TURBOQUANT_REGISTRY_H
#define TURBOQUANT_REGISTRY_H

#include "turboquant/kernel_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kernels for (head_dim, key_bits, value_bits) on the active ISA (below),
 * each ISA's tables built once.  Bits are rates per coordinate: whole (4) or in
 * steps of 1/8 (3.5, 2.25) where the build has them (TQ_BITS).  On
 * TQ_ERROR_UNSUPPORTED the message lists what the build has.  The table is
 * static: never freed, safe to share between threads. */
int tq_find(int head_dim, float key_bits, float value_bits, const tq_kernels** out);

/* The ISA tq_find serves, one of generator/isas.py's (`tq list` names them, best
 * first; "scalar" runs everywhere).  At first use it is
 * the environment's TQ_ISA if that ISA is in the build and runs on this CPU,
 * else the best one that does. */
const char* tq_active_isa(void);
/* Forces the ISA for later tq_find calls (tables already handed out stay valid);
 * NULL returns to the best.  TQ_ERROR_UNSUPPORTED if not built or not runnable. */
int tq_set_isa(const char* isa);
/* Makes the library behave as if this CPU ran no ISA above `isa` ("avx2": no
 * AVX-512; "scalar": no SIMD), for tests (like Highway's
 * SetSupportedTargetsForTest); NULL lifts the cap.  At first use the cap is the
 * environment's TQ_MAX_ISA, if set.  If the active ISA is above the new cap, the
 * best one under it becomes active.  TQ_ERROR_INVALID_ARGUMENT for a name that
 * is no ISA. */
int tq_set_max_isa(const char* isa);
/* The cap: an ISA's name (the best ISA's for none); NULL if TQ_MAX_ISA holds no ISA's
 * name (then nothing is capped; the message says what it holds). */
const char* tq_max_isa(void);
/* 1 if `isa` is in this build and runs on this CPU (within the cap), else 0. */
int tq_isa_available(const char* isa);
/* 1 if `isa`'s kernels are in this build (whether or not this CPU runs them), else 0. */
int tq_isa_compiled(const char* isa);
/* tq_find for a given ISA, whatever the active one. */
int tq_find_isa(const char* isa, int head_dim, float key_bits, float value_bits, const tq_kernels** out);

/* The rotation diagonal for a seed: signs[i] = +-1/sqrt(head_dim), the sign of
 * bit 63 of the i-th SplitMix64 output from state `seed` (docs/packed-format.md). */
int tq_rotation_signs(int head_dim, uint64_t seed, float* signs);

/* Number of (head_dim, bit rate) variants compiled for the active ISA, and each one. */
size_t tq_variant_count(void);
const tq_bit_kernels* tq_variant(size_t index);

/* The message and the tq_status of the last failed call on this thread ("" and
 * TQ_OK if none).  Pointer-returning calls (fa_tq_init, fa_tq_cache_new, ...)
 * report their reason here. */
const char* tq_last_error(void);
int tq_last_status(void);

#ifdef __cplusplus
}
#endif

#endif /* TURBOQUANT_REGISTRY_H */
