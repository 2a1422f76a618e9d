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

// A finite half to float (exact).
inline float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    // Shifted into a float's bit positions, exponent and mantissa read as a float
    // 2^112 too small (biases 127 vs 15); the product fixes normals and subnormals alike.
    const float magnitude = std::bit_cast<float>(std::uint32_t(h & 0x7fffu) << 13) * 0x1p112f;
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) | sign);
}

// out[i] = half_to_float(h[i]) for i < n: a plain loop, which the compiler vectorizes.
inline void widen_halves(const std::uint16_t* h, int n, float* out) {
    for (int i = 0; i < n; ++i) out[i] = half_to_float(h[i]);
}

}  // namespace tq::detail
