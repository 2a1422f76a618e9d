// The KV cache behind the engine's attention: FP32; TurboQuant through the library's
// C++ API (its fused attention on the packed cache); or llama.cpp's ggml block formats,
// decoded to FP32 for the same attention as FP32's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <turboquant/turboquant.hpp>

#include "options.hpp"
#include "ggml_formats.hpp"
#include "hadamard.hpp"
#include "thread_pool.hpp"

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
    // attend for tokens pos .. pos+n-1 (q, out: n × q_heads × head_dim; k, v: n × kv_heads ×
    // head_dim), token i seeing positions up to pos+i; by default one attend per token.
    virtual void attend_batch(int layer, int pos, int n, const float* q, int q_heads, const float* k, const float* v,
                              float* out);
    virtual void clear() = 0;
    virtual std::size_t bytes_per_token() const = 0;  // all layers, keys and values
    virtual double bytes_per_token_all_in() const { return double(bytes_per_token()); }  // with amortized side data
    virtual std::string name() const = 0;
    virtual const CacheShape& shape() const = 0;
};

class Fp32Cache final : public KvCache {
public:
    explicit Fp32Cache(CacheShape shape);
    void attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) override;
    void clear() override {}
    std::size_t bytes_per_token() const override;
    std::string name() const override { return "fp32"; }
    const CacheShape& shape() const override { return shape_; }

private:
    CacheShape shape_;
    std::vector<float> keys_, values_;  // [layer][pos][kv_head][head_dim]
    std::vector<float> scores_;
};

class TurboQuantCache final : public KvCache {
public:
    void attend_batch(int layer, int pos, int n, const float* q, int q_heads, const float* k, const float* v,
                      float* out) override;  // tq::KVCache::attention_batch
    // Throws tq::Error if (head_dim, key_bits, value_bits) is not compiled in.  Attention
    // runs on pool's threads (fa_tq_cache_set_parallel_for) when it has more than one.
    TurboQuantCache(CacheShape shape, const KvConfig& kv, std::uint64_t seed, ThreadPool* pool);
    void attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) override;
    void clear() override;
    std::size_t bytes_per_token() const override;
    double bytes_per_token_all_in() const override;
    std::string name() const override;
    const CacheShape& shape() const override { return shape_; }

private:
    CacheShape shape_;
    KvConfig kv_;
    std::vector<std::unique_ptr<tq::Quantizer>> quantizers_;  // one per distinct config
    // One tq::KVCache per distinct window: linear for full attention, a ring of `window`
    // positions for a sliding window.  layer_[l] = {cache, its layer index in that cache}.
    std::vector<std::unique_ptr<tq::KVCache>> caches_;
    std::vector<std::pair<std::size_t, int>> layer_;
};

// Keys and values as ggml blocks (real bytes), both in one format; attention decodes
// them to FP32.  With rotate, as llama.cpp by default: the cache stores quantize(H_k·k)
// and quantize(H_v·v); the query is rotated by H_k (q·k = H_k q · H_k k, H_k orthonormal)
// and the output, a weighted sum of rotated values, is un-rotated once by H_v (= H_v^-1).
class GgmlCache final : public KvCache {
public:
    // Throws std::invalid_argument for a head_dim that is not a multiple of 32, or with
    // rotate, of 64 (llama.cpp rotates only those).
    GgmlCache(CacheShape shape, ggml::Format format, bool rotate);
    void attend(int layer, int pos, const float* q, int q_heads, const float* k, const float* v, float* out) override;
    void clear() override {}
    std::size_t bytes_per_token() const override;
    std::string name() const override;
    const CacheShape& shape() const override { return shape_; }

private:
    void store(std::vector<std::uint8_t>& to, std::size_t at, const float* x, const std::optional<BlockHadamard>& rotation);

    CacheShape shape_;
    ggml::Format format_;
    std::optional<BlockHadamard> key_rotation_, value_rotation_;  // both set, or neither
    std::size_t vector_bytes_;                                    // one head's key (or value)
    std::vector<std::uint8_t> keys_, values_;                     // [layer][pos][kv_head][blocks]
    std::vector<float> decoded_keys_, decoded_values_;            // one layer's, [pos][kv_head][head_dim]
    std::vector<float> scores_, rotated_, rotated_out_;
};

}  // namespace llama
