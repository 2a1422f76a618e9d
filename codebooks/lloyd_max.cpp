#include "lloyd_max.hpp"

#include <boost/math/quadrature/gauss_kronrod.hpp>
#include <boost/math/special_functions/beta.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace tq::lloyd_max {
namespace {

// Double precision throughout (Boost would otherwise promote to long double,
// which is 20x slower and buys nothing at a 1e-12 tolerance).
constexpr auto kDoublePolicy = boost::math::policies::make_policy(boost::math::policies::promote_double<false>());

// alpha of the Beta((d-1)/2, (d-1)/2) law of x = (t + 1)/2.
double beta_alpha(int head_dim) { return 0.5 * (head_dim - 1); }

// Mass of (a, b) for a < b.  Computed from whichever tail is smaller so that
// the tiny cells in the tails keep full relative precision.
double cell_mass(int d, double a, double b) {
    if (a >= 0) return coordinate_upper_tail(d, a) - coordinate_upper_tail(d, b);
    if (b <= 0) return coordinate_upper_tail(d, -b) - coordinate_upper_tail(d, -a);
    return 1.0 - coordinate_upper_tail(d, b) - coordinate_upper_tail(d, -a);
}

// ∫_a^b t f(t) dt in closed form: with f(t) = (1-t²)^(α-1) / B(1/2, α),
// the antiderivative of t (1-t²)^(α-1) is -(1-t²)^α / (2α).  The difference
// (1-a²)^α - (1-b²)^α = e^Y expm1(X - Y), X = α log1p(-a²), Y = α log1p(-b²),
// keeps full precision for narrow cells at large α.
double cell_first_moment(int d, double a, double b) {
    const double alpha = beta_alpha(d);
    const double norm = boost::math::beta(0.5, alpha, kDoublePolicy);
    const double scale = 1 / (2 * alpha * norm);
    const double x = alpha * std::log1p(-a * a), y = alpha * std::log1p(-b * b);
    if (std::abs(b) == 1) return std::exp(x) * scale;  // (1-b²)^α = 0
    if (std::abs(a) == 1) return -std::exp(y) * scale;
    return std::exp(y) * std::expm1(x - y) * scale;
}

struct Cells {
    std::vector<double> bounds;  // L + 1 values: -1, midpoints, +1
    std::vector<double> mass;    // L
    std::vector<double> target;  // L: E[t | cell], the Lloyd update
};

Cells evaluate_cells(int d, const std::vector<double>& c) {
    const std::size_t L = c.size();
    Cells cells;
    cells.bounds.resize(L + 1);
    cells.bounds[0] = -1;
    cells.bounds[L] = 1;
    for (std::size_t i = 1; i < L; ++i) cells.bounds[i] = 0.5 * (c[i - 1] + c[i]);
    cells.mass.resize(L);
    cells.target.resize(L);
    for (std::size_t i = 0; i < L; ++i) {
        const double a = cells.bounds[i], b = cells.bounds[i + 1];
        cells.mass[i] = cell_mass(d, a, b);
        cells.target[i] = cell_first_moment(d, a, b) / cells.mass[i];
    }
    return cells;
}

// Initial guess by companding: for many levels the optimal point density is
// ∝ f^(1/3) = (1-t²)^((α-1)/3), which is again this family with
// α' = (α-1)/3 + 1, so its quantiles are inverse incomplete beta values.
std::vector<double> companding_guess(int d, int L) {
    const double alpha3 = (beta_alpha(d) - 1) / 3 + 1;
    std::vector<double> c(L);
    for (int i = 0; i < L; ++i) {
        const double p = (i + 0.5) / L;
        c[i] = 2 * boost::math::ibeta_inv(alpha3, alpha3, p, kDoublePolicy) - 1;
    }
    return c;
}

// Solves (I - J) δ = r for the tridiagonal Jacobian J of the Lloyd map
// T(c) = E[t | cell(c)] (each T_i depends on c_{i-1}, c_i, c_{i+1} only).
std::vector<double> newton_step(int d, const std::vector<double>& c, const Cells& cells) {
    const std::size_t L = c.size();
    std::vector<double> lower(L, 0), diag(L, 0), upper(L, 0), rhs(L, 0);
    for (std::size_t i = 0; i < L; ++i) {
        const double a = cells.bounds[i], b = cells.bounds[i + 1], m = cells.mass[i];
        const double ti = cells.target[i];
        // ∂T_i/∂a = f(a)(T_i - a)/m, ∂T_i/∂b = f(b)(b - T_i)/m, and a, b are
        // midpoints, so each contributes half to both neighbouring centroids.
        const double da = (i > 0) ? coordinate_pdf(d, a) * (ti - a) / m : 0;
        const double db = (i + 1 < L) ? coordinate_pdf(d, b) * (b - ti) / m : 0;
        lower[i] = -0.5 * da;
        upper[i] = -0.5 * db;
        diag[i] = 1 - 0.5 * (da + db);
        rhs[i] = ti - c[i];
    }
    // Thomas algorithm.
    for (std::size_t i = 1; i < L; ++i) {
        const double w = lower[i] / diag[i - 1];
        diag[i] -= w * upper[i - 1];
        rhs[i] -= w * rhs[i - 1];
    }
    std::vector<double> delta(L);
    delta[L - 1] = rhs[L - 1] / diag[L - 1];
    for (std::size_t i = L - 1; i-- > 0;) delta[i] = (rhs[i] - upper[i] * delta[i + 1]) / diag[i];
    return delta;
}

bool strictly_ascending_inside(const std::vector<double>& c) {
    if (c.front() <= -1 || c.back() >= 1) return false;
    for (std::size_t i = 1; i < c.size(); ++i)
        if (!(c[i - 1] < c[i])) return false;
    return true;
}

// Keeps c_i = -c_{L-1-i} exact despite rounding.
void symmetrize(std::vector<double>& c) {
    const std::size_t L = c.size();
    for (std::size_t i = 0; i < L / 2; ++i) {
        const double m = 0.5 * (c[L - 1 - i] - c[i]);
        c[i] = -m;
        c[L - 1 - i] = m;
    }
}

double distortion(int d, const Cells& cells, const std::vector<double>& c) {
    using boost::math::quadrature::gauss_kronrod;
    double total = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
        const double ci = c[i];
        auto err = [d, ci](double t) { return (t - ci) * (t - ci) * coordinate_pdf(d, t); };
        total += gauss_kronrod<double, 31>::integrate(err, cells.bounds[i], cells.bounds[i + 1], 5, 1e-13);
    }
    return total;
}

}  // namespace

double coordinate_pdf(int head_dim, double t) {
    if (t <= -1 || t >= 1) return 0;
    const double alpha = beta_alpha(head_dim);
    return std::pow(1 - t * t, alpha - 1) / boost::math::beta(0.5, alpha, kDoublePolicy);
}

double coordinate_upper_tail(int head_dim, double t) {
    if (t <= -1) return 1;
    if (t >= 1) return 0;
    const double alpha = beta_alpha(head_dim);
    return boost::math::ibetac(alpha, alpha, 0.5 * (t + 1), kDoublePolicy);
}

LloydMaxCodebook solve_lloyd_max(int head_dim, int bits) {
    if (head_dim < kMinHeadDim || head_dim > kMaxHeadDim)
        throw std::invalid_argument("head_dim must be in [" + std::to_string(kMinHeadDim) + ", " +
                                    std::to_string(kMaxHeadDim) + "], got " + std::to_string(head_dim));
    if (bits < kMinBits || bits > kMaxBits)
        throw std::invalid_argument("bits must be in [1, 8], got " + std::to_string(bits));

    const int L = 1 << bits;
    std::vector<double> c = companding_guess(head_dim, L);
    LloydMaxCodebook cb;
    cb.head_dim = head_dim;
    cb.bits = bits;
    constexpr int kMaxIterations = 10000;
    for (int it = 1; it <= kMaxIterations; ++it) {
        const Cells cells = evaluate_cells(head_dim, c);
        std::vector<double> next = c;
        const std::vector<double> delta = newton_step(head_dim, c, cells);
        for (int i = 0; i < L; ++i) next[i] += delta[i];
        if (!strictly_ascending_inside(next)) {  // Newton overshot: take a plain Lloyd step
            next = cells.target;
        }
        symmetrize(next);
        double step = 0;
        for (int i = 0; i < L; ++i) step = std::max(step, std::abs(next[i] - c[i]));
        c = std::move(next);
        cb.iterations = it;
        cb.max_last_step = step;
        if (step < kTolerance) break;
    }
    if (!(cb.max_last_step < kTolerance))
        throw std::runtime_error("Lloyd-Max did not converge for head_dim " + std::to_string(head_dim) +
                                 ", bits " + std::to_string(bits));

    const Cells cells = evaluate_cells(head_dim, c);
    cb.centroids = c;
    cb.boundaries.assign(cells.bounds.begin() + 1, cells.bounds.end() - 1);
    cb.mse_per_coordinate = distortion(head_dim, cells, c);
    cb.mse_unit_vector = head_dim * cb.mse_per_coordinate;
    return cb;
}

namespace {
std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

std::string json_array(const std::vector<double>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + number(v[i]);
    return s + "]";
}
}  // namespace

std::string to_json(const LloydMaxCodebook& cb) {
    return "{\n  \"head_dim\": " + std::to_string(cb.head_dim) +
           ",\n  \"bits\": " + std::to_string(cb.bits) +
           ",\n  \"distribution\": \"(t+1)/2 ~ Beta((d-1)/2, (d-1)/2)\"" +
           ",\n  \"centroids\": " + json_array(cb.centroids) +
           ",\n  \"boundaries\": " + json_array(cb.boundaries) +
           ",\n  \"mse_per_coordinate\": " + number(cb.mse_per_coordinate) +
           ",\n  \"mse_unit_vector\": " + number(cb.mse_unit_vector) +
           ",\n  \"iterations\": " + std::to_string(cb.iterations) +
           ",\n  \"max_last_step\": " + number(cb.max_last_step) + "\n}\n";
}

std::string to_text(const LloydMaxCodebook& cb) {
    std::string s = "head_dim " + std::to_string(cb.head_dim) + ", bits " + std::to_string(cb.bits) +
                    ", " + std::to_string(cb.centroids.size()) + " levels, " +
                    std::to_string(cb.iterations) + " iterations\n";
    s += "mse_per_coordinate " + number(cb.mse_per_coordinate) + "\n";
    s += "mse_unit_vector    " + number(cb.mse_unit_vector) + "\n";
    s += "level  centroid                 upper boundary\n";
    for (std::size_t i = 0; i < cb.centroids.size(); ++i) {
        char line[96];
        std::snprintf(line, sizeof line, "%5zu  %+.17f  %s\n", i, cb.centroids[i],
                      i < cb.boundaries.size() ? number(cb.boundaries[i]).c_str() : "+1");
        s += line;
    }
    return s;
}

}  // namespace tq::lloyd_max
