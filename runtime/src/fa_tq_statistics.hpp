// The running statistics behind centering and smoothing (docs/levers.md): what one
// appended vector adds to them, and what a new block stores from them.
//
// Robust: each entry's distance from the running mean enters the sums clipped at
// kOutlierLimit running RMS, so one outlier token moves a mean by a bounded amount.
// Shrunk: a block's mean is the running mean scaled toward zero by how well it is
// known (James-Stein), and its smoothing scales' logarithms toward zero by how much
// of their spread a quarter of the sampling noise explains, so data without structure
// stores little of it (docs/levers.md: why a quarter).
#pragma once

#include "fa_tq_internal.hpp"

#include <cstdint>
#include <vector>

namespace tq::detail {

// How far from the running mean an entry counts, in running RMS of its channel
// (its deviation's, plus the head's mean deviation and a prior that fades with
// the count).  A Gaussian entry passes 8.5 sigma (~1e-17 odds) untouched.
inline constexpr double kOutlierLimit = 6.0;

// Adds an appended vector [heads][d] to the stream's running sums (robust).
void learn_vector(fa_tq_stream& s, int heads, int d, const float* vec);

// A new block's means [heads][d]: each head's running mean times its James-Stein
// factor max(0, 1 - (tr C / n) / |m|^2), as half floats.
void block_mean(const fa_tq_stream& s, int heads, int d, std::uint16_t* out);

// A new block's key channel scales [heads][d] (half floats), from the key energies
// about the mean the block subtracts and the queries' energies.  scratch: 3 d doubles.
void block_smooth(const fa_tq_layer& lay, const fa_tq_stream& s, int heads, int d, std::vector<double>& scratch,
                  std::uint16_t* out);

}  // namespace tq::detail
