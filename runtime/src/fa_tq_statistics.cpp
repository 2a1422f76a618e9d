// Robust running sums, and the shrunk means and smoothing scales a block stores from them.
#include "fa_tq_statistics.hpp"

#include "half_float.hpp"

#include <algorithm>
#include <cmath>

namespace tq::detail {
namespace {

// Smoothing scales stay within [2^-8, 2^8]: enough for any real channel spread.
constexpr double kSmoothLimit = 256.0;
// Regularizes the channel energies: a channel with no energy gets this share of the mean's.
constexpr double kSmoothFloor = 1e-2;
// The share of the Gaussian sampling noise the smoothing scales are shrunk by
// (block_smooth).  The whole of it (1) over-shrinks real keys: Gemma 3's K8/V8 and
// K5/V4 KL rose 6-7%; none of it (0) costs isotropic data 1% (docs/levers.md,
// measured).  A quarter keeps isotropic data within 0.3% and real keys' gain whole.
constexpr double kSmoothNoiseShare = 0.25;

// One head's running mean and spread, read off the sums.
struct HeadStats {
    double n;              // vectors summed
    const double* sum;     // [d]
    const double* sum_sq;  // [d]
    int d;

    double mean(int i) const { return n > 0 ? sum[i] / n : 0.0; }
    double energy(int i) const { return n > 0 ? sum_sq[i] / n : 0.0; }  // E x_i^2
    double variance(int i) const { return std::max(0.0, energy(i) - mean(i) * mean(i)); }
};

HeadStats head_stats(const fa_tq_stream& s, int h, int d) {
    const std::size_t base = std::size_t(h) * d;
    return {double(s.count), &s.sum[base], &s.sum_sq[base], d};
}

// James-Stein: the running mean m of n vectors with covariance C is off by about
// tr C / n in squared norm; scaling it by max(0, 1 - (tr C / n) / |m|^2) keeps a
// mean that stands out of that noise and drops one that does not.  Below two
// vectors C is unknown: nothing is subtracted.
double mean_shrink(const HeadStats& st) {
    if (st.n < 2) return 0.0;
    double trace = 0, mean_sq = 0;
    for (int i = 0; i < st.d; ++i) {
        trace += st.variance(i);
        mean_sq += st.mean(i) * st.mean(i);
    }
    trace *= st.n / (st.n - 1);  // unbiased
    return mean_sq > 0 ? std::max(0.0, 1.0 - trace / st.n / mean_sq) : 0.0;
}

}  // namespace

void learn_vector(fa_tq_stream& s, int heads, int d, const float* vec) {
    for (int h = 0; h < heads; ++h) {
        const HeadStats st = head_stats(s, h, d);
        double mean_variance = 0, mean_energy = 0;
        for (int i = 0; i < d; ++i) {
            mean_variance += st.variance(i) / d;
            mean_energy += st.energy(i) / d;
        }
        // Before any vector, and while every one was zero, there is no scale to judge by.
        const bool judged = st.n > 0 && mean_energy > 0;
        const std::size_t base = std::size_t(h) * d;
        for (int i = 0; i < d; ++i) {
            double x = vec[base + i];
            if (judged) {  // squared first: the square root only for the rare entry clipped
                const double m = st.mean(i);
                const double limit_sq =
                    kOutlierLimit * kOutlierLimit * (st.variance(i) + mean_variance + mean_energy / st.n);
                if ((x - m) * (x - m) > limit_sq) x = m + std::copysign(std::sqrt(limit_sq), x - m);
            }
            s.sum[base + i] += x;
            s.sum_sq[base + i] += x * x;
        }
    }
    ++s.count;
}

void block_mean(const fa_tq_stream& s, int heads, int d, std::uint16_t* out) {
    for (int h = 0; h < heads; ++h) {
        const HeadStats st = head_stats(s, h, d);
        const double shrink = mean_shrink(st);
        for (int i = 0; i < d; ++i)
            out[std::size_t(h) * d + i] =
                float_to_half(float(std::clamp(shrink * st.mean(i), -double(kHalfMax), double(kHalfMax))));
    }
}

// s_i = (E k_i^2 / E q_i^2)^(1/4), geometric mean 1: dividing key channel i by s_i and
// multiplying the query's by it keeps scores exact and minimizes the score error of
// isotropic quantization noise, (sum_i |q_i||k_i|)^2 instead of |q|^2 |k|^2
// (Cauchy-Schwarz; docs/levers.md).  Each energy estimated from n Gaussian samples
// has a logarithm of variance about 2/n, so log s_i carries noise of variance
// (2/n_k + 2/n_q) / 16; the log-scales are shrunk toward 0 by the share of their
// spread that a quarter of that noise explains (James-Stein, with the noise share
// above), and isotropic data keeps s close to 1.
void block_smooth(const fa_tq_layer& lay, const fa_tq_stream& s, int heads, int d, std::vector<double>& scratch,
                  std::uint16_t* out) {
    double* key = scratch.data();
    double* query = key + d;
    double* log_s = query + d;
    for (int h = 0; h < heads; ++h) {
        const std::size_t base = std::size_t(h) * d;
        const HeadStats st = head_stats(s, h, d);
        const double kept = s.centered ? 1.0 - mean_shrink(st) : 1.0;  // the share of the mean left in
        double key_mean = 0, query_mean = 0;
        for (int i = 0; i < d; ++i) {
            key[i] = st.variance(i) + kept * kept * st.mean(i) * st.mean(i);
            query[i] = lay.query_count ? lay.query_sum_sq[base + i] / double(lay.query_count) : 0.0;
            key_mean += key[i] / d;
            query_mean += query[i] / d;
        }
        std::fill(log_s, log_s + d, 0.0);
        if (key_mean > 0 && query_mean > 0) {
            double log_mean = 0, spread = 0;
            for (int i = 0; i < d; ++i) {
                log_s[i] = 0.25 * (std::log(key[i] + kSmoothFloor * key_mean) - std::log(query[i] + kSmoothFloor * query_mean));
                log_mean += log_s[i] / d;
            }
            for (int i = 0; i < d; ++i) spread += (log_s[i] - log_mean) * (log_s[i] - log_mean) / d;
            const double noise = kSmoothNoiseShare * (2.0 / st.n + 2.0 / double(lay.query_count)) / 16.0;
            const double shrink = spread > 0 ? std::max(0.0, 1.0 - noise / spread) : 0.0;
            for (int i = 0; i < d; ++i) log_s[i] = shrink * (log_s[i] - log_mean);
        }
        for (int i = 0; i < d; ++i)
            out[base + i] = float_to_half(float(std::clamp(std::exp(log_s[i]), 1 / kSmoothLimit, kSmoothLimit)));
    }
}

}  // namespace tq::detail
