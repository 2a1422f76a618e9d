// The KV cache behind the engine's attention: FP32, or TurboQuant through the
// library's C++ API (its fused attention on the packed cache).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <turboquant/turboquant.hpp>

#include "options.hpp"

namespace llama {

struct CacheShape {
    int layers, kv_heads, head_dim, max_positions;
};

class KvCache {
public:
    virtual ~KvCache() = default;
    // Store this token's k and v (kv_heads × head_dim) at pos in layer, then attend
    // q (q_heads × head_dim; query head h reads KV head h / (q_heads / kv_heads)) over
    // positions 0..pos, writing out (q_heads × head_dim).  Positions come in order.
    virtual void attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) = 0;
    virtual void clear() = 0;
    virtual std::size_t bytes_per_token() const = 0;  // all layers, keys and values
    virtual double bytes_per_token_all_in() const { return double(bytes_per_token()); }  // with amortized side data
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
    TurboQuantCache(CacheShape shape, const KvConfig& kv, std::uint64_t seed);
    void attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) override;
    void clear() override { cache_->clear(); }
    std::size_t bytes_per_token() const override { return cache_->bytes_per_token(); }
    double bytes_per_token_all_in() const override { return cache_->bytes_per_token_all_in(); }
    std::string name() const override;

private:
    CacheShape shape_;
    KvConfig kv_;
    tq::Quantizer quantizer_;
    std::unique_ptr<tq::KVCache> cache_;
};

}  // namespace llama
