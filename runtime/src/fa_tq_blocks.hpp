// Where positions fall for the levers: the exact sinks first, then blocks of
// positions that share one centering mean (docs/levers.md).
//
// With S sinks and blocks of B positions (a power of two), position a >= S has
// offset r = a - S; blocks double from one position up to B, then stay at B:
//   [0,1) [1,2) [2,4) ... [B/2,B) [B,2B) [2B,3B) ...
// so the first positions, whose running mean moves fastest, get fresh means
// early, and a long context stores one mean per B positions.
#pragma once

#include "fa_tq_internal.hpp"

#include <bit>

namespace tq::detail {

inline bool is_sink(const fa_tq_levers& lv, long a) { return a < lv.sinks; }

// The block of a non-sink absolute position.
inline long block_of(const fa_tq_levers& lv, long a) {
    const long r = a - lv.sinks, log_b = std::countr_zero(unsigned(lv.center_block));
    if (r < lv.center_block) return r == 0 ? 0 : std::bit_width(static_cast<unsigned long>(r));
    return log_b + r / lv.center_block;
}

// The first absolute position of block b.
inline long block_start(const fa_tq_levers& lv, long b) {
    const long log_b = std::countr_zero(unsigned(lv.center_block));
    if (b <= log_b) return lv.sinks + (b == 0 ? 0 : 1L << (b - 1));
    return lv.sinks + (b - log_b) * lv.center_block;
}

inline long block_end(const fa_tq_levers& lv, long b) { return block_start(lv, b + 1); }

}  // namespace tq::detail
