// The batch's dense tiles on the integer paths (docs/kernels.md, "The integer dense
// tiles"): a block of up to 64 keys or values unpacked once per tile to the int8
// centroids the fused integer kernels look up, and multiplied by tq_kernels::product_int8
// with every row of the tile at once, rounded and finished as those kernels do (the
// queries per record, the weights per chunk of 64 values), so that the tile gives the
// fused kernels' integers and floats.
#pragma once

#include "attend_ops.hpp"
#include "turboquant/kernel_types.h"

#include <cstddef>
#include <cstdint>

namespace tq::detail {

// One variant's int8 centroids (isa/int8.hpp): coordinate i's level l is high[l] for
// i < high_coords, low[l] after.
struct IntLevels {
    float step = 0;  // 0: not on an integer path
    int high_coords = 0;
    std::int8_t low[32] = {}, high[32] = {};
};
IntLevels int_levels(const tq_bit_kernels& k);

// Slots per block of a tile (the value sum's chunk), and rows per call of the product.
constexpr std::size_t kIntBlock = 64;
constexpr std::size_t kIntRows = 48;

// Per task scratch, each of rows and codes 64 * d bytes (float storage: the keys'
// bytes are moved four at a time by AttendOps::transpose), sums kIntRows * max(d, 64).
struct IntScratch {
    float* rows;   // the block's centroids, one code per row of d bytes
    float* codes;  // the same in the product's layout
    std::int32_t* sums;
};

// Scores of m rows (their queries rounded by AttendOps::round_query: bytes [m][d], and
// qscale[r] = s_q * key step) against the n <= 64 keys at codes (code_bytes apart)
// with scales: out[r * ld + t] = scales[t] * ((Σ_i Q_r,i T_t,i) * qscale[r]).
void int_scores(const tq_kernels& kern, const AttendOps& ops, const IntLevels& levels, const IntScratch& s,
                const std::uint8_t* codes, std::size_t code_bytes, const float* scales, std::size_t n,
                const std::uint8_t* queries, const float* qscale, std::size_t m, float* out, std::size_t ld);

// acc row r (acc + r * acc_stride) += the n <= 64 values at codes with weights row r
// (weights + r * weight_stride) times scales, as accumulate_int's chunk: the weight x
// scale products rounded per row (AttendOps::round_weights into weight_bytes, 64 a row,
// and weight_scales), the sums exact, one fused multiply-add per coordinate.
void int_values(const tq_kernels& kern, const AttendOps& ops, const IntLevels& levels, const IntScratch& s,
                const std::uint8_t* codes, std::size_t code_bytes, const float* scales, std::size_t n,
                const float* weights, std::size_t weight_stride, std::size_t m, std::uint8_t* weight_bytes,
                float* weight_scales, float* acc, std::size_t acc_stride);

}  // namespace tq::detail
