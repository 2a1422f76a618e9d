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
    int group = q_heads / shape_.kv_heads, d = shape_.head_dim, window = shape_.window(layer);
    int first = window > 0 && pos >= window ? pos - window + 1 : 0;  // a sliding window: the last `window` positions
    for (int h = 0; h < q_heads; ++h) {
        std::size_t head = base + static_cast<std::size_t>(first) * row + static_cast<std::size_t>(h / group) * d;
        attend_head(q + h * d, &keys_[head], &values_[head], pos + 1 - first, static_cast<int>(row), d, scores_.data(),
                    out + h * d);
    }
}

std::size_t Fp32Cache::bytes_per_token() const {
    return 2 * sizeof(float) * static_cast<std::size_t>(shape_.layers) * shape_.kv_heads * shape_.head_dim;
}

TurboQuantCache::TurboQuantCache(CacheShape shape, float key_bits, float value_bits, std::uint64_t seed)
    : shape_(shape),
      key_bits_(key_bits),
      value_bits_(value_bits),
      quantizer_(shape.head_dim, tq::Config{key_bits, value_bits}, seed) {
    std::vector<int> windows;  // of each cache: 0 for a linear one
    std::vector<int> layers;   // in each cache
    for (int l = 0; l < shape.layers; ++l) {
        int w = shape.window(l) > 0 && shape.window(l) < shape.max_positions ? shape.window(l) : 0;
        std::size_t c = 0;
        while (c < windows.size() && windows[c] != w) ++c;
        if (c == windows.size()) {
            windows.push_back(w);
            layers.push_back(0);
        }
        layer_.emplace_back(c, layers[c]++);
    }
    for (std::size_t c = 0; c < windows.size(); ++c) {
        auto mode = windows[c] ? tq::KVCache::Mode::ring : tq::KVCache::Mode::linear;
        caches_.push_back(std::make_unique<tq::KVCache>(quantizer_, layers[c], shape.kv_heads,
                                                        windows[c] ? windows[c] : shape.max_positions, mode));
    }
}

void TurboQuantCache::attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) {
    if (layer < 0 || layer >= shape_.layers) throw std::out_of_range("tq cache: layer " + std::to_string(layer) + " out of range");
    std::size_t row = static_cast<std::size_t>(shape_.kv_heads) * shape_.head_dim;
    std::size_t q_row = static_cast<std::size_t>(q_heads) * shape_.head_dim;
    auto [c, l] = layer_[static_cast<std::size_t>(layer)];
    caches_[c]->attention(l, pos, {q, q_row}, {k, row}, {v, row}, {out, q_row});
}

void TurboQuantCache::clear() {
    for (auto& c : caches_) c->clear();
}

std::size_t TurboQuantCache::bytes_per_token() const {
    std::size_t bytes = 0;
    for (const auto& c : caches_) bytes += c->bytes_per_token();
    return bytes;
}

std::string TurboQuantCache::name() const {
    std::ostringstream s;
    s << "tq K" << key_bits_ << "/V" << value_bits_;
    return s.str();
}

}  // namespace llama
