// TurboQuant KV cache for C++: RAII types over the C API (turboquant.h).
//
// Errors are exceptions: every call that the C API would fail throws tq::Error
// (registry.hpp) carrying the tq_status code and the same one-line message, and
// leaves the cache unchanged.  Buffers are std::span and their sizes are checked.
// Thread safety is the C API's: a Quantizer is immutable and shareable; one
// KVCache takes concurrent calls only on different layers.
#pragma once

#include "turboquant/registry.hpp"
#include "turboquant/turboquant.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace tq {

// fa_tq_config's fields; zero (the defaults here) means the library's default.
struct Config {
    float key_bits = 4;    // whole, or in steps of 1/8 (3.5)
    float value_bits = 2;
    fa_tq_scale scale = FA_TQ_SCALE_DEFAULT;
    fa_tq_scale_format scale_format = FA_TQ_SCALE_FORMAT_DEFAULT;
    fa_tq_center center = FA_TQ_CENTER_DEFAULT;
    int center_block = 0;  // positions per mean block (a power of two)
    int sinks = 0;         // first positions kept exact; FA_TQ_NO_SINKS for none
    fa_tq_smooth smooth = FA_TQ_SMOOTH_DEFAULT;
    fa_tq_score score = FA_TQ_SCORE_DEFAULT;
    fa_tq_value_sum value_sum = FA_TQ_VALUE_SUM_DEFAULT;
};

enum class Kind { key, value };

// The quantizer: head dim, bit widths, scale and the seeded rotation.
class Quantizer {
public:
    Quantizer(int head_dim, Config config = {}, std::uint64_t seed = 0);
    int head_dim() const noexcept { return head_dim_; }
    const fa_tq_state* get() const noexcept { return state_.get(); }

private:
    struct Free {
        void operator()(fa_tq_state* s) const noexcept { fa_tq_free(s); }
    };
    std::unique_ptr<fa_tq_state, Free> state_;
    int head_dim_;
};

// A compressed cache of layers × KV heads × positions.  Keeps pointers to its
// Quantizers, which must outlive it.
class KVCache {
public:
    enum class Mode { linear, ring };
    KVCache(const Quantizer& quantizer, int num_layers, int num_heads, int max_seq_len, Mode mode = Mode::linear);
    // Per-layer configs: layer l is quantized by *layers[l] (one head dim for all).
    KVCache(std::span<const Quantizer* const> layers, int num_heads, int max_seq_len, Mode mode = Mode::linear);

    // vec: num_heads * head_dim floats.
    void quantize(int layer, int pos, std::span<const float> vec, Kind kind);
    // out: count * num_heads * head_dim floats.
    void dequantize(int layer, int start, int count, Kind kind, std::span<float> out) const;
    // k, v: num_heads * head_dim; q, out: n_q_heads * head_dim (n_q_heads from q's size).
    void attention(int layer, int pos, std::span<const float> q, std::span<const float> k, std::span<const float> v,
                   std::span<float> out, float softmax_scale = 0);
    // Prefill (fa_tq_attention_batch): k, v: n_tokens * num_heads * head_dim;
    // q, out: n_tokens * n_q_heads * head_dim.
    void attention_batch(int layer, int pos, int n_tokens, std::span<const float> q, std::span<const float> k,
                         std::span<const float> v, std::span<float> out, float softmax_scale = 0);
    // Both with shaped scores (fa_tq_attention_ex, fa_tq_attention_batch_ex): the
    // options' arrays hold one float per query head.
    void attention(int layer, int pos, std::span<const float> q, std::span<const float> k, std::span<const float> v,
                   std::span<float> out, const fa_tq_attend_options& options);
    void attention_batch(int layer, int pos, int n_tokens, std::span<const float> q, std::span<const float> k,
                         std::span<const float> v, std::span<float> out, const fa_tq_attend_options& options);
    // Threads inside one attention call (fa_tq_cache_set_threads): 1 is one pass
    // on the calling thread; n > 1 the cache's own pool of n threads.
    void set_threads(int n_threads);
    // The engine's pool instead (fa_tq_cache_set_parallel_for's contract); nullptr: none.
    void set_parallel_for(fa_tq_parallel_for fn, void* ctx);
    void evict(int n);
    // fa_tq_cache_set_window, _truncate, _oldest, _resize.
    void set_window(int window);
    void truncate(int length);
    int oldest() const;
    void resize(int max_seq_len);
    // Hold what `other` holds (fa_tq_cache_copy: same shape and quantizers).
    void copy_from(const KVCache& other);
    // The contents as machine-local bytes and back (fa_tq_cache_serialize / _deserialize).
    std::vector<std::uint8_t> serialize() const;
    void deserialize(std::span<const std::uint8_t> bytes);
    void clear();
    int seq_len() const;
    std::size_t bytes_per_token() const;  // codes and scales
    double bytes_per_token_all_in() const;  // with the levers' block records amortized (not the sinks)
    std::size_t bytes_total() const;
    int num_heads() const noexcept { return num_heads_; }
    int head_dim() const noexcept { return quantizers_.empty() ? 0 : quantizers_.front()->head_dim(); }

private:
    struct Free {
        void operator()(fa_tq_cache* c) const noexcept { fa_tq_cache_free(c); }
    };
    const fa_tq_state* state(int layer) const;
    // The query heads of an attention call's buffers for n_tokens tokens (throws on a size mismatch).
    int query_heads(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                    std::span<float> out, int n_tokens) const;
    std::vector<const Quantizer*> quantizers_;  // per layer
    std::unique_ptr<fa_tq_cache, Free> cache_;
    int num_heads_;
};

}  // namespace tq
