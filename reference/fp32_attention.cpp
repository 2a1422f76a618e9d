#include "fp32_attention.hpp"

#include <algorithm>
#include <cmath>

namespace tq::reference {
namespace {

float dot(const float* a, const float* b, int d) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= d; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < d; ++i) s += a[i] * b[i];
    return s;
}

}  // namespace

void fp32_attention(const float* q, int n_q_heads, const float* keys, const float* values, std::size_t n,
                    int num_kv_heads, int head_dim, float scale, float* scores, float* out) {
    const int group = n_q_heads / num_kv_heads;
    const std::size_t row = std::size_t(num_kv_heads) * head_dim;
    for (int h = 0; h < n_q_heads; ++h) {
        const float* qh = q + std::size_t(h) * head_dim;
        const std::size_t kv = std::size_t(h / group) * head_dim;
        float m = -INFINITY;
        for (std::size_t t = 0; t < n; ++t) {
            scores[t] = scale * dot(qh, keys + t * row + kv, head_dim);
            m = std::max(m, scores[t]);
        }
        double sum = 0;
        for (std::size_t t = 0; t < n; ++t) {
            scores[t] = std::exp(scores[t] - m);
            sum += scores[t];
        }
        float* oh = out + std::size_t(h) * head_dim;
        std::fill(oh, oh + head_dim, 0.0f);
        for (std::size_t t = 0; t < n; ++t) {
            const float p = scores[t];
            const float* v = values + t * row + kv;
            for (int i = 0; i < head_dim; ++i) oh[i] += p * v[i];
        }
        const float inv = static_cast<float>(1 / sum);
        for (int i = 0; i < head_dim; ++i) oh[i] *= inv;
    }
}

double cosine(const float* a, const float* b, std::size_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (std::size_t i = 0; i < n; ++i) {
        ab += double(a[i]) * b[i];
        aa += double(a[i]) * a[i];
        bb += double(b[i]) * b[i];
    }
    if (aa == 0 && bb == 0) return 1;
    return ab / std::sqrt(aa * bb);
}

}  // namespace tq::reference
