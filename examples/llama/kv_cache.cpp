#include "kv_cache.hpp"

#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "vector.hpp"

namespace llama {
namespace {

// One query head over n cached positions (stride floats apart): softmax(q·k / sqrt(d)) · v.
// d a multiple of 16.
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

Fp32Cache::Fp32Cache(CacheShape shape)
    : shape_(shape),
      keys_(static_cast<std::size_t>(shape.layers) * shape.max_positions * shape.kv_heads * shape.head_dim),
      values_(keys_.size()),
      scores_(static_cast<std::size_t>(shape.max_positions)) {}

void Fp32Cache::attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) {
    if (layer < 0 || layer >= shape_.layers || pos < 0 || pos >= shape_.max_positions || q_heads % shape_.kv_heads != 0)
        throw std::out_of_range("fp32 cache: layer " + std::to_string(layer) + ", position " + std::to_string(pos) +
                                " or " + std::to_string(q_heads) + " query heads out of range");
    std::size_t row = static_cast<std::size_t>(shape_.kv_heads) * shape_.head_dim;
    std::size_t base = static_cast<std::size_t>(layer) * shape_.max_positions * row;
    std::memcpy(&keys_[base + pos * row], k, row * sizeof(float));
    std::memcpy(&values_[base + pos * row], v, row * sizeof(float));
    int group = q_heads / shape_.kv_heads, d = shape_.head_dim;
    for (int h = 0; h < q_heads; ++h) {
        std::size_t head = base + static_cast<std::size_t>(h / group) * d;
        attend_head(q + h * d, &keys_[head], &values_[head], pos + 1, static_cast<int>(row), d, scores_.data(), out + h * d);
    }
}

std::size_t Fp32Cache::bytes_per_token() const {
    return 2 * sizeof(float) * static_cast<std::size_t>(shape_.layers) * shape_.kv_heads * shape_.head_dim;
}

TurboQuantCache::TurboQuantCache(CacheShape shape, const KvConfig& kv, std::uint64_t seed)
    : shape_(shape),
      kv_(kv),
      quantizer_(shape.head_dim,
                 tq::Config{kv.key_bits, kv.value_bits, FA_TQ_SCALE_DEFAULT,
                            static_cast<fa_tq_scale_format>(kv.levers.scale_format),
                            static_cast<fa_tq_center>(kv.levers.center), kv.levers.center_block, kv.levers.sinks},
                 seed),
      cache_(std::make_unique<tq::KVCache>(quantizer_, shape.layers, shape.kv_heads, shape.max_positions)) {}

void TurboQuantCache::attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) {
    std::size_t row = static_cast<std::size_t>(shape_.kv_heads) * shape_.head_dim;
    std::size_t q_row = static_cast<std::size_t>(q_heads) * shape_.head_dim;
    cache_->attention(layer, pos, {q, q_row}, {k, row}, {v, row}, {out, q_row});
}

std::string TurboQuantCache::name() const {
    std::ostringstream s;
    s << "tq K" << kv_.key_bits << "/V" << kv_.value_bits << (kv_.levers.text.empty() ? "" : ":") << kv_.levers.text;
    return s.str();
}

}  // namespace llama
