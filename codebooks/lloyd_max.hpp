// Lloyd-Max scalar quantizer for one coordinate of a uniformly random unit vector
// in R^d.  That coordinate t has density f(t) ∝ (1 - t²)^((d-3)/2) on [-1, 1], i.e.
// (t + 1)/2 ~ Beta((d-1)/2, (d-1)/2).  The quantizer is optimal for this exact
// marginal (not the Beta(d/2, d/2) approximation).
#pragma once

#include <string>
#include <vector>

namespace tq::lloyd_max {

struct LloydMaxCodebook {
    int head_dim = 0;
    int bits = 0;
    std::vector<double> centroids;   // ascending, 2^bits values, c_i = -c_{L-1-i}
    std::vector<double> boundaries;  // 2^bits - 1 midpoints of adjacent centroids
    double mse_per_coordinate = 0;   // E[(t - Q(t))²]
    double mse_unit_vector = 0;      // head_dim * mse_per_coordinate
    int iterations = 0;              // Newton (or fallback Lloyd) steps to convergence
    double max_last_step = 0;        // max |Δcentroid| of the last step
};

inline constexpr int kMinHeadDim = 8;
inline constexpr int kMaxHeadDim = 1024;  // beyond, the 1e-12 tolerance meets ibeta's noise floor
inline constexpr int kMinBits = 1;
inline constexpr int kMaxBits = 8;
inline constexpr double kTolerance = 1e-12;  // on max |Δcentroid|

// Throws std::invalid_argument for head_dim or bits out of range, and
// std::runtime_error if the iteration fails to converge.
LloydMaxCodebook solve_lloyd_max(int head_dim, int bits);

// The coordinate marginal, exposed for tests: density f(t), and P(t > x).
double coordinate_pdf(int head_dim, double t);
double coordinate_upper_tail(int head_dim, double t);

std::string to_json(const LloydMaxCodebook& cb);
std::string to_text(const LloydMaxCodebook& cb);

}  // namespace tq::lloyd_max
