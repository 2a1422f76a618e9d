#include "synthetic_kv.hpp"

#include <cmath>
#include <random>

namespace tq::cli {
namespace {

constexpr int kFactors = 8, kOutliers = 4;

struct HeadModel {
    std::vector<float> sigma, key_sigma, mu, loadings;  // loadings: d x kFactors
};

HeadModel make_head(int d, std::mt19937_64& rng) {
    std::normal_distribution<float> normal;
    HeadModel m{std::vector<float>(d), std::vector<float>(d), std::vector<float>(d),
                std::vector<float>(std::size_t(d) * kFactors)};
    for (int i = 0; i < d; ++i) m.sigma[i] = std::exp(0.5f * normal(rng));
    m.key_sigma = m.sigma;
    for (int i = 0; i < d; ++i) m.mu[i] = m.sigma[i] * normal(rng);
    for (int o = 0; o < kOutliers; ++o) {  // a large offset of fixed sign, and twice the spread
        const int i = int(rng() % d);
        m.mu[i] = (rng() % 2 ? 10.0f : -10.0f) * m.sigma[i];
        m.key_sigma[i] = 2 * m.sigma[i];
    }
    for (auto& b : m.loadings) b = normal(rng) / std::sqrt(float(kFactors));
    return m;
}

// out = scale * s ⊙ (0.6 z + B w)
void correlated(const HeadModel& m, const std::vector<float>& s, float scale, std::mt19937_64& rng, float* out) {
    std::normal_distribution<float> normal;
    float w[kFactors];
    for (auto& x : w) x = normal(rng);
    const int d = int(s.size());
    for (int i = 0; i < d; ++i) {
        float f = 0.6f * normal(rng);
        for (int j = 0; j < kFactors; ++j) f += m.loadings[std::size_t(i) * kFactors + j] * w[j];
        out[i] = scale * s[i] * f;
    }
}

}  // namespace

SyntheticKV make_synthetic_kv(int layers, int heads, int positions, int head_dim, int queries_per_layer,
                              std::uint64_t seed) {
    SyntheticKV kv{layers, heads, positions, head_dim, {}, {}, {}, queries_per_layer};
    const std::size_t token = std::size_t(heads) * head_dim;
    kv.keys.resize(std::size_t(layers) * positions * token);
    kv.values.resize(kv.keys.size());
    kv.queries.resize(std::size_t(layers) * queries_per_layer * token);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal;
    for (int l = 0; l < layers; ++l)
        for (int h = 0; h < heads; ++h) {
            const HeadModel m = make_head(head_dim, rng);
            for (int t = 0; t < positions; ++t) {
                const float r = std::exp(0.3f * normal(rng));
                float* k = &kv.keys[kv.index(l, t) + std::size_t(h) * head_dim];
                correlated(m, m.key_sigma, r, rng, k);
                for (int i = 0; i < head_dim; ++i) k[i] += m.mu[i];
                correlated(m, m.sigma, r, rng, &kv.values[kv.index(l, t) + std::size_t(h) * head_dim]);
            }
            for (int i = 0; i < queries_per_layer; ++i) {
                float* q = &kv.queries[((std::size_t(l) * queries_per_layer + i) * heads + h) * head_dim];
                correlated(m, m.sigma, 1.0f, rng, q);
                const float* kj = kv.key(l, int(rng() % positions)) + std::size_t(h) * head_dim;
                for (int c = 0; c < head_dim; ++c) q[c] += 0.15f * (kj[c] - m.mu[c]);
            }
        }
    return kv;
}

}  // namespace tq::cli
