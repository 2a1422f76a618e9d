#include "rotation_signs.hpp"

#include <cmath>

namespace tq::detail {
namespace {

// SplitMix64 (Steele, Lea, Flood 2014): fully specified, identical on every platform.
std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

}  // namespace

void draw_rotation_signs(int head_dim, std::uint64_t seed, float* signs) {
    const float magnitude = static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
    std::uint64_t state = seed;
    for (int i = 0; i < head_dim; ++i) signs[i] = (splitmix64(state) >> 63) ? -magnitude : magnitude;
}

}  // namespace tq::detail
