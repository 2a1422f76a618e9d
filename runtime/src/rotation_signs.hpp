// The rotation's random signs s_i = ±1/sqrt(d), drawn from the seed.
#pragma once

#include <cstdint>

namespace tq::detail {

// signs[i] for i < head_dim (head_dim > 0): the sign bit of the i-th draw of SplitMix64
// from `seed`, times 1/sqrt(head_dim).  The same on every platform and ISA.
void draw_rotation_signs(int head_dim, std::uint64_t seed, float* signs);

}  // namespace tq::detail
