#include "kv_cache.hpp"

#include <cstring>
#include <sstream>
#include <stdexcept>

#include "attention.hpp"

namespace llama {
namespace {

void check_attend(const std::string& cache, const CacheShape& shape, int layer, int pos, int q_heads) {
    if (layer < 0 || layer >= shape.layers || pos < 0 || pos >= shape.max_positions || q_heads % shape.kv_heads != 0)
        throw std::out_of_range(cache + " cache: layer " + std::to_string(layer) + ", position " + std::to_string(pos) +
                                " or " + std::to_string(q_heads) + " query heads out of range");
}

}  // namespace

Fp32Cache::Fp32Cache(CacheShape shape)
    : shape_(shape),
      keys_(static_cast<std::size_t>(shape.layers) * shape.max_positions * shape.kv_heads * shape.head_dim),
      values_(keys_.size()),
      scores_(4 * static_cast<std::size_t>(shape.max_positions)) {}  // attend_positions' 4 rows

void Fp32Cache::attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) {
    check_attend("fp32", shape_, layer, pos, q_heads);
    std::size_t row = static_cast<std::size_t>(shape_.kv_heads) * shape_.head_dim;
    std::size_t base = static_cast<std::size_t>(layer) * shape_.max_positions * row;
    std::memcpy(&keys_[base + pos * row], k, row * sizeof(float));
    std::memcpy(&values_[base + pos * row], v, row * sizeof(float));
    int window = shape_.window(layer);
    int first = window > 0 && pos >= window ? pos - window + 1 : 0;  // a sliding window: the last `window` positions
    attend_positions(q, q_heads, &keys_[base + first * row], &values_[base + first * row], pos + 1 - first, shape_.kv_heads,
                     shape_.head_dim, scores_.data(), out);
}

std::size_t Fp32Cache::bytes_per_token() const {
    return 2 * sizeof(float) * static_cast<std::size_t>(shape_.layers) * shape_.kv_heads * shape_.head_dim;
}

void KvCache::attend_batch(int layer, int pos, int n, const float* q, int q_heads, const float* k, const float* v,
                           float* out) {
    const std::size_t q_row = static_cast<std::size_t>(q_heads) * shape().head_dim,
                      kv_row = static_cast<std::size_t>(shape().kv_heads) * shape().head_dim;
    for (int t = 0; t < n; ++t)
        attend(layer, pos + t, q + t * q_row, q_heads, k + t * kv_row, v + t * kv_row, out + t * q_row);
}

TurboQuantCache::TurboQuantCache(CacheShape shape, const KvConfig& kv, std::uint64_t seed, ThreadPool* pool)
    : shape_(shape), kv_(kv) {
    const Levers& lv = kv.levers;
    auto quantizer = [&](float key_bits, float value_bits) {
        quantizers_.push_back(std::make_unique<tq::Quantizer>(
            shape.head_dim,
            tq::Config{key_bits, value_bits, FA_TQ_SCALE_DEFAULT, static_cast<fa_tq_scale_format>(lv.scale_format),
                       static_cast<fa_tq_center>(lv.center), lv.center_block, lv.sinks,
                       static_cast<fa_tq_smooth>(lv.smooth), static_cast<fa_tq_score>(lv.score),
                       static_cast<fa_tq_value_sum>(lv.value_sum)},
            seed));
        return quantizers_.back().get();
    };
    // Per-layer configs: the sweep's bits, and other bits for the layers it names.
    std::vector<const tq::Quantizer*> per_layer(static_cast<std::size_t>(shape.layers), quantizer(kv.key_bits, kv.value_bits));
    for (const auto& l : lv.layers) {
        if (l.first < 0 || l.last < l.first || l.last >= shape.layers)
            throw std::invalid_argument("layers " + std::to_string(l.first) + "-" + std::to_string(l.last) +
                                        " are not within the model's 0-" + std::to_string(shape.layers - 1));
        const tq::Quantizer* q = quantizer(l.key_bits, l.value_bits);
        std::fill(per_layer.begin() + l.first, per_layer.begin() + l.last + 1, q);
    }
    // One tq::KVCache per distinct window, holding its layers' quantizers.
    std::vector<int> windows;                                 // of each cache: 0 for a linear one
    std::vector<std::vector<const tq::Quantizer*>> layers;   // of each cache
    for (int l = 0; l < shape.layers; ++l) {
        int w = shape.window(l) > 0 && shape.window(l) < shape.max_positions ? shape.window(l) : 0;
        std::size_t c = 0;
        while (c < windows.size() && windows[c] != w) ++c;
        if (c == windows.size()) {
            windows.push_back(w);
            layers.emplace_back();
        }
        layer_.emplace_back(c, static_cast<int>(layers[c].size()));
        layers[c].push_back(per_layer[static_cast<std::size_t>(l)]);
    }
    for (std::size_t c = 0; c < windows.size(); ++c) {
        auto mode = windows[c] ? tq::KVCache::Mode::ring : tq::KVCache::Mode::linear;
        caches_.push_back(std::make_unique<tq::KVCache>(layers[c], shape.kv_heads,
                                                        windows[c] ? windows[c] : shape.max_positions, mode));
        if (pool && pool->size() > 1) caches_.back()->set_parallel_for(&ThreadPool::parallel_for, pool);
    }
}

void TurboQuantCache::attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) {
    if (layer < 0 || layer >= shape_.layers) throw std::out_of_range("tq cache: layer " + std::to_string(layer) + " out of range");
    std::size_t row = static_cast<std::size_t>(shape_.kv_heads) * shape_.head_dim;
    std::size_t q_row = static_cast<std::size_t>(q_heads) * shape_.head_dim;
    auto [c, l] = layer_[static_cast<std::size_t>(layer)];
    caches_[c]->attention(l, pos, {q, q_row}, {k, row}, {v, row}, {out, q_row});
}

void TurboQuantCache::attend_batch(int layer, int pos, int n, const float* q, int q_heads, const float* k,
                                   const float* v, float* out) {
    if (layer < 0 || layer >= shape_.layers) throw std::out_of_range("tq cache: layer " + std::to_string(layer) + " out of range");
    const std::size_t row = static_cast<std::size_t>(n) * shape_.kv_heads * shape_.head_dim;
    const std::size_t q_row = static_cast<std::size_t>(n) * q_heads * shape_.head_dim;
    auto [c, l] = layer_[static_cast<std::size_t>(layer)];
    caches_[c]->attention_batch(l, pos, n, {q, q_row}, {k, row}, {v, row}, {out, q_row});
}

void TurboQuantCache::clear() {
    for (auto& c : caches_) c->clear();
}

std::size_t TurboQuantCache::bytes_per_token() const {
    std::size_t bytes = 0;
    for (const auto& c : caches_) bytes += c->bytes_per_token();
    return bytes;
}

double TurboQuantCache::bytes_per_token_all_in() const {
    double bytes = 0;
    for (const auto& c : caches_) bytes += c->bytes_per_token_all_in();
    return bytes;
}

std::string TurboQuantCache::name() const {
    std::ostringstream s;
    s << "tq K" << kv_.key_bits << "/V" << kv_.value_bits << (kv_.levers.text.empty() ? "" : ":") << kv_.levers.text;
    return s.str();
}

GgmlCache::GgmlCache(CacheShape shape, ggml::Format format, bool rotate)
    : shape_(shape),
      format_(format),
      vector_bytes_(static_cast<std::size_t>(shape.head_dim / ggml::kBlock) * ggml::block_bytes(format)) {
    std::string type(ggml::name(format));
    if (shape.head_dim % ggml::kBlock)
        throw std::invalid_argument(type + " stores blocks of 32 values; head_dim " + std::to_string(shape.head_dim) + " is not a multiple");
    if (rotate) {
        if (!key_rotation_size(shape.head_dim))
            throw std::invalid_argument(type + ": llama.cpp rotates only head dims that are multiples of 64, not " +
                                        std::to_string(shape.head_dim) + "; use " + type + "-norot");
        key_rotation_.emplace(key_rotation_size(shape.head_dim));
        value_rotation_.emplace(value_rotation_size(shape.head_dim));
    }
    std::size_t per_layer = static_cast<std::size_t>(shape.max_positions) * shape.kv_heads;
    keys_.resize(shape.layers * per_layer * vector_bytes_);
    values_.resize(keys_.size());
    decoded_keys_.resize(per_layer * shape.head_dim);
    decoded_values_.resize(decoded_keys_.size());
    scores_.resize(4 * static_cast<std::size_t>(shape.max_positions));  // attend_positions' 4 rows
}

void GgmlCache::store(std::vector<std::uint8_t>& to, std::size_t at, const float* x, const std::optional<BlockHadamard>& rotation) {
    int d = shape_.head_dim;
    for (int h = 0; h < shape_.kv_heads; ++h) {
        const float* head = x + static_cast<std::size_t>(h) * d;
        if (rotation) {
            rotated_.resize(static_cast<std::size_t>(d));
            rotation->apply(head, d, rotated_.data());
            head = rotated_.data();
        }
        ggml::quantize_row(format_, head, d, &to[at + h * vector_bytes_]);
    }
}

void GgmlCache::attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) {
    check_attend(std::string(ggml::name(format_)), shape_, layer, pos, q_heads);
    int d = shape_.head_dim, window = shape_.window(layer);
    int first = window > 0 && pos >= window ? pos - window + 1 : 0;  // a sliding window: the last `window` positions
    int n = pos + 1 - first;
    std::size_t position_bytes = static_cast<std::size_t>(shape_.kv_heads) * vector_bytes_;
    std::size_t layer_base = static_cast<std::size_t>(layer) * shape_.max_positions * position_bytes;
    std::size_t at = layer_base + static_cast<std::size_t>(pos) * position_bytes;
    store(keys_, at, k, key_rotation_);
    store(values_, at, v, value_rotation_);
    // This layer's positions first..pos are contiguous: decode them in one pass.
    std::size_t from = layer_base + static_cast<std::size_t>(first) * position_bytes;
    ggml::dequantize_row(format_, &keys_[from], n * shape_.kv_heads * d, decoded_keys_.data());
    ggml::dequantize_row(format_, &values_[from], n * shape_.kv_heads * d, decoded_values_.data());
    if (!key_rotation_) {
        attend_positions(q, q_heads, decoded_keys_.data(), decoded_values_.data(), n, shape_.kv_heads, d, scores_.data(), out);
        return;
    }
    std::size_t q_size = static_cast<std::size_t>(q_heads) * d;
    rotated_.resize(q_size);
    rotated_out_.resize(q_size);
    for (int h = 0; h < q_heads; ++h) key_rotation_->apply(q + h * d, d, &rotated_[static_cast<std::size_t>(h) * d]);
    attend_positions(rotated_.data(), q_heads, decoded_keys_.data(), decoded_values_.data(), n, shape_.kv_heads, d,
                     scores_.data(), rotated_out_.data());
    for (int h = 0; h < q_heads; ++h) value_rotation_->apply(&rotated_out_[static_cast<std::size_t>(h) * d], d, out + h * d);
}

std::size_t GgmlCache::bytes_per_token() const {
    return 2 * static_cast<std::size_t>(shape_.layers) * shape_.kv_heads * vector_bytes_;
}

std::string GgmlCache::name() const { return std::string(ggml::name(format_)) + (key_rotation_ ? "" : "-norot"); }

}  // namespace llama
