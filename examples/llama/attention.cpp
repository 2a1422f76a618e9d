#include "attention.hpp"

#include <cmath>
#include <cstring>

#include "vector.hpp"

namespace llama {
namespace {

// One query head over n positions (stride floats apart).
LLAMA_TARGET_CLONES
void attend_head(const float* q, const float* keys, const float* values, int n, int stride, int d, float* scores,
                 float* out) {
    float scale = 1.0f / std::sqrt(static_cast<float>(d)), top = -INFINITY;
    for (int s = 0; s < n; ++s) {
        v16 acc = {};
        const float* k = keys + static_cast<long>(s) * stride;
        for (int i = 0; i < d; i += 16) {
            v16 a, b;
            std::memcpy(&a, q + i, sizeof a);
            std::memcpy(&b, k + i, sizeof b);
            acc += a * b;
        }
        float dot = 0;
        for (int l = 0; l < 16; ++l) dot += acc[l];
        scores[s] = dot * scale;
        top = std::fmax(top, scores[s]);
    }
    float sum = 0;
    for (int s = 0; s < n; ++s) sum += scores[s] = std::exp(scores[s] - top);
    for (int i = 0; i < d; i += 16) {
        v16 acc = {};
        for (int s = 0; s < n; ++s) {
            v16 b;
            std::memcpy(&b, values + static_cast<long>(s) * stride + i, sizeof b);
            acc += scores[s] * b;
        }
        acc /= sum;
        std::memcpy(out + i, &acc, sizeof acc);
    }
}

}  // namespace

void attend_positions(const float* q, int q_heads, const float* keys, const float* values, int n, int kv_heads, int d,
                      float* scores, float* out) {
    int group = q_heads / kv_heads, stride = kv_heads * d;
    for (int h = 0; h < q_heads; ++h) {
        long head = static_cast<long>(h / group) * d;
        attend_head(q + h * d, keys + head, values + head, n, stride, d, scores, out + h * d);
    }
}

}  // namespace llama
