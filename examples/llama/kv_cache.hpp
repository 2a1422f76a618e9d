// The KV cache behind the engine's attention: FP32, or TurboQuant through the
// library's C++ API (its fused attention on the packed cache).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <turboquant/turboquant.hpp>

namespace llama {

struct CacheShape {
    int layers, kv_heads, head_dim, max_positions;
    std::vector<int> windows;  // per layer: attend to the last windows[l] positions only (0, or none given: all)
    int window(int layer) const { return static_cast<std::size_t>(layer) < windows.size() ? windows[layer] : 0; }
};

class KvCache {
public:
    virtual ~KvCache() = default;
    // Store this token's k and v (kv_heads × head_dim) at pos in layer, then attend
    // q (q_heads × head_dim; query head h reads KV head h / (q_heads / kv_heads)) over
    // positions 0..pos (a layer with a window w: pos-w+1..pos), writing out
    // (q_heads × head_dim) with softmax(q·k / sqrt(head_dim)).  Positions come in order.
    virtual void attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) = 0;
    virtual void clear() = 0;
    virtual std::size_t bytes_per_token() const = 0;  // all layers, keys and values
    virtual std::string name() const = 0;
};

class Fp32Cache final : public KvCache {
public:
    explicit Fp32Cache(CacheShape shape);
    void attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) override;
    void clear() override {}
    std::size_t bytes_per_token() const override;
    std::string name() const override { return "fp32"; }

private:
    CacheShape shape_;
    std::vector<float> keys_, values_;  // [layer][pos][kv_head][head_dim]
    std::vector<float> scores_;
};

class TurboQuantCache final : public KvCache {
public:
    // Throws tq::Error if (head_dim, key_bits, value_bits) is not compiled in.
    TurboQuantCache(CacheShape shape, float key_bits, float value_bits, std::uint64_t seed);
    void attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) override;
    void clear() override;
    std::size_t bytes_per_token() const override;
    std::string name() const override;

private:
    CacheShape shape_;
    float key_bits_, value_bits_;
    tq::Quantizer quantizer_;
    // One tq::KVCache per distinct window: linear for full attention, a ring of `window`
    // positions for a sliding window.  layer_[l] = {cache, its layer index in that cache}.
    std::vector<std::unique_ptr<tq::KVCache>> caches_;
    std::vector<std::pair<std::size_t, int>> layer_;
};

}  // namespace llama
