// IEEE 754 binary16 ("half") conversions for the cache's scales and means.
// Both are exact where the value fits (every half is a float), portable (no
// F16C needed) and branch-light so that loops over them vectorize.
#pragma once

#include <bit>
#include <cstdint>

namespace tq::detail {

// The largest finite half.
inline constexpr float kHalfMax = 65504.0f;

// Round a finite float with |f| <= kHalfMax to the nearest half, ties to even.
inline std::uint16_t float_to_half(float f) {
    std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    if (x < 0x38800000u) {  // below 2^-14: a subnormal half (or zero)
        // Adding 0.5 makes the float's last place 2^-24, the half subnormals'
        // step, so the hardware's round-to-nearest-even does the rounding.
        const float r = std::bit_cast<float>(x) + 0.5f;
        return static_cast<std::uint16_t>(sign | (std::bit_cast<std::uint32_t>(r) - 0x3f000000u));
    }
    // Rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to nearest even.
    x += 0xc8000fffu + ((x >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | (x >> 13));
}

// A finite half to float (exact), in integer steps and one exact int-to-float
// conversion: no arithmetic on subnormal floats (which costs a microcode assist per
// vector on x86).  Normals: the exponent rebiased (15 -> 127, + 112 << 23) in place;
// subnormals and zero (exponent 0): mantissa * 2^-24, a normal float or 0.
inline float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16, bits = h & 0x7fffu;
    const std::uint32_t normal = (bits << 13) + 0x38000000u;
    const std::uint32_t small = std::bit_cast<std::uint32_t>(float(std::int32_t(bits)) * 0x1p-24f);
    const std::uint32_t is_small = 0u - std::uint32_t(bits < 0x400u);  // all ones or zero: a select without a branch
    return std::bit_cast<float>((small & is_small) | (normal & ~is_small) | sign);
}

}  // namespace tq::detail
