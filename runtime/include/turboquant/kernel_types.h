/* Signatures of the generated kernels and the registry's kernel tables (C and C++).
 *
 * Conventions for every kernel of head dim d and b bits (a rate, maybe fractional):
 *  - `signs` is the rotation's diagonal: d floats, each +-1/sqrt(d), from
 *    tq_rotation_signs(d, seed, signs).
 *  - a packed vector is d*b/8 bytes (docs/packed-format.md) plus one float scale.
 *  - "rotated domain" means after `rotate`; score and accumulate work there.
 */
#ifndef TURBOQUANT_KERNEL_TYPES_H
#define TURBOQUANT_KERNEL_TYPES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes returned by the library's C functions. */
enum tq_status {
    TQ_OK = 0,
    TQ_ERROR_INVALID_ARGUMENT = 1, /* NULL pointer, out-of-range index or size */
    TQ_ERROR_UNSUPPORTED = 2,      /* head_dim or bits not compiled into this build */
    TQ_ERROR_NONFINITE = 3,        /* NaN or Inf in an input vector */
    TQ_ERROR_RANGE = 4,            /* a magnitude beyond what stays finite (TQ_MAX_NORM) */
    TQ_ERROR_OUT_OF_MEMORY = 5
};

/* The largest vector norm encode accepts at head dim d: decoding runs the
 * unnormalized transform, whose intermediates reach sqrt(d) times the scale, and
 * the least-squares scale can exceed the norm by ~1.3x, so norms up to
 * FLT_MAX / (4 sqrt(d)) (7.5e36 at d = 128) decode to finite values. */
#define TQ_MAX_NORM(d) (3.4028234663852886e38 / (4.0 * sqrt((double)(d))))

/* How encode chooses a vector's scale s (x is reconstructed as s R^T c[levels]):
 * the norm ‖x‖ (the paper's), or the least-squares s = ‖x‖ <u, ĉ> / ‖ĉ‖², which
 * minimizes ‖x − s Rᵀĉ‖ for the chosen levels (docs/scale.md measures both). */
enum tq_scale_kind { TQ_SCALE_NORM = 0, TQ_SCALE_LEAST_SQUARES = 1 };

/* out = H (signs ⊙ in) (rotate) or signs ⊙ (Hᵀ in) (unrotate), H the head dim's Hadamard
 * matrix (docs/rotations.md); out may alias in. */
typedef void (*tq_rotate_fn)(const float* signs, const float* in, float* out);
/* Rotate, normalize, quantize and pack x: writes code[d*b/8] and *scale (of the
 * given tq_scale_kind).  Returns TQ_OK, or TQ_ERROR_NONFINITE (NaN/Inf in x) /
 * TQ_ERROR_RANGE (norm above TQ_MAX_NORM(d)) having written nothing. */
typedef int (*tq_encode_fn)(const float* signs, const float* x, int scale_kind, uint8_t* code, float* scale);
/* out[d] = unrotate(scale * centroid[level_i]). */
typedef void (*tq_decode_fn)(const float* signs, const uint8_t* code, float scale, float* out);
/* out[j*out_stride + t] = scales[t] * <q_rot[j], centroid[levels of key t]>, t < n,
 * j < n_queries (out_stride >= n); keys packed back to back, queries (q_rot:
 * n_queries x d) back to back.  Each key is unpacked once for all the queries (the
 * query heads of a GQA group in one pass); each query's scores are those it gets alone. */
typedef void (*tq_score_fn)(const float* q_rot, size_t n_queries, const uint8_t* codes, const float* scales,
                            size_t n, float* out, size_t out_stride);
/* acc_j[d] += sum_t weights_j[t] * scales[t] * centroid[levels of value t], rotated
 * domain, for queries j < n_queries: weights_j at weights + j*weight_stride, acc_j at
 * acc + j*acc_stride.  Each value is unpacked once for all the queries (a GQA group's
 * query heads); each query's sum is the one it gets alone. */
typedef void (*tq_accumulate_fn)(const float* weights, size_t weight_stride, size_t n_queries,
                                 const uint8_t* codes, const float* scales, size_t n, float* acc,
                                 size_t acc_stride);
/* The ISA's dense product (one for every head dim), prefill's tiles over decoded keys
 * and values: c[i*ldc + j] = sum_p a[i*lda + p] * b[p*ldb + j] (accumulate 0), or c[i*ldc + j]
 * += that sum (accumulate 1), for i < m, j < n, each sum over p < k in increasing p.  Each
 * row of b must be readable to a multiple of 16 floats past its first (columns n and up
 * are read, not used); c is written at j < n only. */
typedef void (*tq_product_fn)(size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b,
                              size_t ldb, float* c, size_t ldc, int accumulate);
/* The packed layout alone: d levels (each < 2^b, 2^(b+1) for the high-rate
 * coordinates of a fractional rate) <-> code_bytes bytes. */
typedef void (*tq_pack_fn)(const uint8_t* levels, uint8_t* code);
typedef void (*tq_unpack_fn)(const uint8_t* code, uint8_t* levels);

/* Everything generated for one (head_dim, bit rate, ISA).  A whole rate b has
 * bits = b, rate_eighths = 8b and high_coords = 0.  A fractional rate b + f/8
 * quantizes coordinates [0, high_coords) (high_coords = head_dim*f/8, after the
 * rotation) with the (b+1)-bit codebook high_centroids/high_boundaries and the
 * rest with the b-bit one (docs/packed-format.md). */
typedef struct tq_bit_kernels {
    int head_dim;
    int bits;                   /* whole bits (of the low-rate coordinates) */
    int rate_eighths;           /* bits per coordinate in eighths: 28 = 3.5 bits */
    size_t code_bytes;          /* head_dim * rate_eighths / 64 */
    const float* centroids;     /* 2^bits, ascending */
    const float* boundaries;    /* 2^bits - 1 */
    int high_coords;            /* coordinates at bits + 1 (0 for whole rates) */
    const float* high_centroids;  /* 2^(bits+1), or NULL */
    const float* high_boundaries; /* 2^(bits+1) - 1, or NULL */
    double mse_unit_vector;     /* E‖u - û‖² for a random unit vector u (theory) */
    tq_encode_fn encode;
    tq_decode_fn decode;
    tq_score_fn score;
    tq_accumulate_fn accumulate;
    tq_pack_fn pack;
    tq_unpack_fn unpack;
    /* score's integer path: the query rounded to int8 per call (with 32-level
     * codebooks at head dims up to 512 also its residual, a second byte), the
     * centroids to an int8 table, the products summed exactly in int32
     * (docs/kernels.md bounds the difference to score).  Where a codebook has more
     * than 32 levels (a rate above 5 bits) the query and the table are int16 instead
     * (at most 2047 in magnitude, less above head dim 512). */
    tq_score_fn score_int;
    /* accumulate's integer path: per chunk of 64 values each query's weight x scale
     * products rounded to bytes (0..254) with one float scale, the centroids to an int8
     * table, the sums exact in int32 (docs/kernels.md bounds the difference to
     * accumulate).  Weights and scales must not be negative (a negative product counts
     * as 0).  NULL where a codebook has more than 32 levels (a rate above 5 bits). */
    tq_accumulate_fn accumulate_int;
} tq_bit_kernels;

/* The kernel table for one (head_dim, key bits, value bits), as tq_find returns it. */
typedef struct tq_kernels {
    int head_dim;
    const char* isa;
    tq_rotate_fn rotate;
    tq_rotate_fn unrotate;
    const tq_bit_kernels* key;
    const tq_bit_kernels* value;
    tq_product_fn product;
} tq_kernels;

#ifdef __cplusplus
}
#endif

#endif /* TURBOQUANT_KERNEL_TYPES_H */
