// Euclidean norms in double, of float and of half-float vectors (the range checks').
#pragma once

#include "half_float.hpp"

#include <cmath>
#include <cstdint>

namespace tq::detail {

inline double norm(const float* x, int d) {
    double s = 0;
    for (int i = 0; i < d; ++i) s += double(x[i]) * x[i];
    return std::sqrt(s);
}

inline double half_norm(const std::uint16_t* x, int d) {
    double s = 0;
    for (int i = 0; i < d; ++i) s += double(half_to_float(x[i])) * half_to_float(x[i]);
    return std::sqrt(s);
}

}  // namespace tq::detail
