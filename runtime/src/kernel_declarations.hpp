// Declarations of every generated kernel, from the generated list (kernels.inc):
// each kind's signature, for the symbols the generator names.
#pragma once

#include "turboquant/kernel_types.h"

#define TQ_DECLARE_rotate(SYMBOL) void SYMBOL(const float* signs, const float* in, float* out);
#define TQ_DECLARE_unrotate(SYMBOL) TQ_DECLARE_rotate(SYMBOL)
#define TQ_DECLARE_encode(SYMBOL) int SYMBOL(const float* signs, const float* x, int scale_kind, uint8_t* code, float* scale);
#define TQ_DECLARE_decode(SYMBOL) void SYMBOL(const float* signs, const uint8_t* code, float scale, float* out);
#define TQ_DECLARE_score(SYMBOL)                                                                     \
    void SYMBOL(const float* q, size_t n_queries, const uint8_t* codes, const float* scales, size_t n, \
                float* out, size_t out_stride);
#define TQ_DECLARE_score_int(SYMBOL) TQ_DECLARE_score(SYMBOL)
#define TQ_DECLARE_accumulate(SYMBOL)                                                               \
    void SYMBOL(const float* weights, size_t weight_stride, size_t n_queries, const uint8_t* codes,  \
                const float* scales, size_t n, float* acc, size_t acc_stride);
#define TQ_DECLARE_accumulate_int(SYMBOL) TQ_DECLARE_accumulate(SYMBOL)
#define TQ_DECLARE_product(SYMBOL)                                                                  \
    void SYMBOL(size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b, size_t ldb, float* c, \
                size_t ldc, int accumulate);
#define TQ_DECLARE_pack(SYMBOL) void SYMBOL(const uint8_t* levels, uint8_t* code);
#define TQ_DECLARE_unpack(SYMBOL) void SYMBOL(const uint8_t* code, uint8_t* levels);

#define TQ_KERNEL(KIND, D, EIGHTHS, ISA, SYMBOL, FILE) namespace tq::ISA { TQ_DECLARE_##KIND(SYMBOL) }
#define TQ_ROTATION(D, ISA, ROTATE, UNROTATE, PRODUCT)
#define TQ_VARIANT(D, RATE, ISA, ENCODE, DECODE, SCORE, ACCUMULATE, PACK, UNPACK, SCORE_INT, ACCUMULATE_INT)
#include "kernels.inc"
#undef TQ_KERNEL
#undef TQ_ROTATION
#undef TQ_VARIANT
