// Euclidean norms in double, of float and of half-float vectors (the range checks'),
// and a dot product in double (a query with a block's mean).
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

// <x, y> in double, in four independent partial sums (no chain of dependent adds).
inline double dot_double(const float* x, const float* y, int d) {
    double s[4] = {};
    int i = 0;
    for (; i + 4 <= d; i += 4)
        for (int j = 0; j < 4; ++j) s[j] += double(x[i + j]) * y[i + j];
    for (; i < d; ++i) s[0] += double(x[i]) * y[i];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

}  // namespace tq::detail
