// Declarations of every generated kernel, from the generated X-macro list.
#pragma once

#include "turboquant/kernel_types.h"

#define TQ_ROTATION(D, ISA)                                                      \
    namespace tq::ISA {                                                          \
    void tq_rotate_d##D##__##ISA(const float* signs, const float* in, float* out);   \
    void tq_unrotate_d##D##__##ISA(const float* signs, const float* in, float* out); \
    }
#define TQ_BIT_KERNELS(D, B, ISA)                                                                      \
    namespace tq::ISA {                                                                                \
    int tq_encode_d##D##_b##B##__##ISA(const float* signs, const float* x, int scale_kind, uint8_t* code,   \
                                      float* scale);                                                   \
    void tq_decode_d##D##_b##B##__##ISA(const float* signs, const uint8_t* code, float scale, float* out); \
    void tq_score_d##D##_b##B##__##ISA(const float* q, size_t n_queries, const uint8_t* codes,         \
                                       const float* scales, size_t n, float* out, size_t out_stride);  \
    void tq_accumulate_d##D##_b##B##__##ISA(const float* weights, size_t weight_stride, size_t n_queries,  \
                                            const uint8_t* codes, const float* scales, size_t n,       \
                                            float* acc, size_t acc_stride);                            \
    }                                                                                                  \
    namespace tq::scalar { /* the layout alone is scalar for every ISA */                              \
    void tq_pack_d##D##_b##B##__scalar(const uint8_t* levels, uint8_t* code);                           \
    void tq_unpack_d##D##_b##B##__scalar(const uint8_t* code, uint8_t* levels);                         \
    }
#include "kernels.inc"
#undef TQ_ROTATION
#undef TQ_BIT_KERNELS
