#include "attention.hpp"

#include <cmath>
#include <cstring>

#include "vector.hpp"

namespace llama {
namespace {

// G query heads of one KV head (q: G rows of d) over n positions (stride floats
// apart): each key and value is loaded once for the G heads; each head's arithmetic is
// what it would be alone.  scores: G rows of n floats.
template <int G>
[[gnu::always_inline]] inline void attend_heads(const float* q, const float* keys, const float* values, int n, int stride,
                                                int d, float* scores, float* out) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    float top[G], sum[G] = {};
    for (float& t : top) t = -INFINITY;
    for (int s = 0; s < n; ++s) {
        v16 acc[G] = {};
        const float* k = keys + static_cast<long>(s) * stride;
        for (int i = 0; i < d; i += 16) {
            v16 b;
            std::memcpy(&b, k + i, sizeof b);
            for (int g = 0; g < G; ++g) {
                v16 a;
                std::memcpy(&a, q + g * d + i, sizeof a);
                acc[g] += a * b;
            }
        }
        for (int g = 0; g < G; ++g) {
            float dot = 0;
            for (int l = 0; l < 16; ++l) dot += acc[g][l];
            const float score = scores[g * n + s] = dot * scale;
            top[g] = score > top[g] ? score : top[g];
        }
    }
    for (int g = 0; g < G; ++g)
        for (int s = 0; s < n; ++s) sum[g] += scores[g * n + s] = std::exp(scores[g * n + s] - top[g]);
    for (int i = 0; i < d; i += 16) {
        v16 acc[G] = {};
        for (int s = 0; s < n; ++s) {
            v16 b;
            std::memcpy(&b, values + static_cast<long>(s) * stride + i, sizeof b);
            for (int g = 0; g < G; ++g) acc[g] += scores[g * n + s] * b;
        }
        for (int g = 0; g < G; ++g) {
            acc[g] /= sum[g];
            std::memcpy(out + g * d + i, &acc[g], sizeof acc[g]);
        }
    }
}

// A KV head's `heads` query heads, up to 4 at a time.
LLAMA_TARGET_CLONES
void attend_group(const float* q, int heads, const float* keys, const float* values, int n, int stride, int d,
                  float* scores, float* out) {
    for (int h = 0; h < heads; h += 4) {
        const float* qh = q + static_cast<long>(h) * d;
        float* oh = out + static_cast<long>(h) * d;
        switch (heads - h) {
        case 1: attend_heads<1>(qh, keys, values, n, stride, d, scores, oh); break;
        case 2: attend_heads<2>(qh, keys, values, n, stride, d, scores, oh); break;
        case 3: attend_heads<3>(qh, keys, values, n, stride, d, scores, oh); break;
        default: attend_heads<4>(qh, keys, values, n, stride, d, scores, oh); break;
        }
    }
}

}  // namespace

void attend_positions(const float* q, int q_heads, const float* keys, const float* values, int n, int kv_heads, int d,
                      float* scores, float* out) {
    int group = q_heads / kv_heads, stride = kv_heads * d;
    for (int g = 0; g < kv_heads; ++g) {
        long head = static_cast<long>(g) * d, first = static_cast<long>(g) * group * d;
        attend_group(q + first, group, keys + head, values + head, n, stride, d, scores, out + first);
    }
}

}  // namespace llama
