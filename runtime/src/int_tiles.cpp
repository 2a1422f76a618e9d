// The integer dense tiles (int_tiles.hpp).
#include "int_tiles.hpp"

#include "isa/int8.hpp"

#include <algorithm>
#include <cstring>

namespace tq::detail {

IntLevels int_levels(const tq_bit_kernels& k) {
    IntLevels l;
    const int low = 1 << k.bits, high = k.high_coords ? 2 << k.bits : 0;
    // The generated kernels' step: the largest centroid of the variant's codebooks over 127.
    l.step = int8::step(k.centroids[low - 1], high ? k.high_centroids[high - 1] : 0.0f);
    l.high_coords = k.high_coords;
    for (int i = 0; i < low && i < 32; ++i) l.low[i] = int8::level(k.centroids[i], l.step);
    for (int i = 0; i < high && i < 32; ++i) l.high[i] = int8::level(k.high_centroids[i], l.step);
    return l;
}

namespace {

// The n codes' int8 centroids into rows, one per d bytes; sums[t]: code t's sum (or null).
void unpack_rows(const tq_bit_kernels& k, const AttendOps& ops, const IntLevels& levels, const std::uint8_t* codes,
                 std::size_t code_bytes, std::size_t n, std::int8_t* rows, std::int32_t* sums) {
    const std::size_t d = std::size_t(k.head_dim);
    std::uint8_t l[1024];  // the largest head dim (generator/variants.py)
    for (std::size_t t = 0; t < n; ++t) {
        k.unpack(codes + t * code_bytes, l);
        const std::int32_t sum = ops.lookup_levels(l, d, std::size_t(levels.high_coords), levels.high, levels.low,
                                                   rows + t * d);
        if (sums) sums[t] = sum;
    }
}

}  // namespace

void int_scores(const tq_kernels& kern, const AttendOps& ops, const IntLevels& levels, const IntScratch& s,
                const std::uint8_t* codes, std::size_t code_bytes, const float* scales, std::size_t n,
                const std::uint8_t* queries, const float* qscale, std::size_t m, float* out, std::size_t ld) {
    const std::size_t d = std::size_t(kern.head_dim), ldb = 4 * kIntBlock;
    std::int32_t bias[kIntBlock];  // 127 Σ_i T_t,i: the queries' bytes are Q + 127
    unpack_rows(*kern.key, ops, levels, codes, code_bytes, n, reinterpret_cast<std::int8_t*>(s.rows), bias);
    for (std::size_t t = 0; t < n; ++t) bias[t] *= 127;
    // Key t as column t, four coordinates (one float's bytes) a column per row of b; the
    // columns up to 64 zero (the product reads those up to the next 16).
    ops.transpose(s.rows, n, d / 4, s.codes, kIntBlock);
    for (std::size_t r0 = 0; r0 < m; r0 += kIntRows) {
        const std::size_t count = std::min(kIntRows, m - r0);
        kern.product_int8(count, n, d, queries + r0 * d, d, reinterpret_cast<const std::int8_t*>(s.codes), ldb, s.sums,
                          kIntBlock);
        for (std::size_t r = 0; r < count; ++r)
            ops.int_scores(s.sums + r * kIntBlock, bias, scales, n, qscale[r0 + r], out + (r0 + r) * ld);
    }
}

void int_values(const tq_kernels& kern, const AttendOps& ops, const IntLevels& levels, const IntScratch& s,
                const std::uint8_t* codes, std::size_t code_bytes, const float* scales, std::size_t n,
                const float* weights, std::size_t weight_stride, std::size_t m, std::uint8_t* weight_bytes,
                float* weight_scales, float* acc, std::size_t acc_stride) {
    const std::size_t d = std::size_t(kern.head_dim), ldb = 4 * d, k = (n + 3) / 4 * 4;
    // Values t..t+3 as one row of b, their bytes interleaved; up to a multiple of four, zero (weight 0).
    auto* natural = reinterpret_cast<std::int8_t*>(s.rows);
    unpack_rows(*kern.value, ops, levels, codes, code_bytes, n, natural, nullptr);
    ops.interleave4(natural, n, d, reinterpret_cast<std::int8_t*>(s.codes));
    for (std::size_t r = 0; r < m; ++r)
        weight_scales[r] =
            ops.round_weights(weights + r * weight_stride, scales, n, weight_bytes + r * kIntBlock) * levels.step;
    for (std::size_t r0 = 0; r0 < m; r0 += kIntRows) {
        const std::size_t count = std::min(kIntRows, m - r0);
        kern.product_int8(count, d, k, weight_bytes + r0 * kIntBlock, kIntBlock, reinterpret_cast<const std::int8_t*>(s.codes),
                          ldb, s.sums, d);
        for (std::size_t r = 0; r < count; ++r)
            ops.int_accumulate(s.sums + r * d, d, weight_scales[r0 + r], acc + (r0 + r) * acc_stride);
    }
}

}  // namespace tq::detail
