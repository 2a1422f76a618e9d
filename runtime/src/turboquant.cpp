// The C++ API: size checks on spans, then the C API, whose failures become tq::Error.
#include "turboquant/turboquant.hpp"

#include <algorithm>
#include <string>

namespace tq {
namespace {

void check(int rc) {
    if (rc != FA_TQ_OK) throw Error(static_cast<tq_status>(rc), fa_tq_last_error());
}

void check_size(const char* what, std::size_t got, std::size_t want) {
    if (got != want)
        throw Error(TQ_ERROR_INVALID_ARGUMENT, std::string("tq::KVCache: ") + what + " has " + std::to_string(got) +
                                                   " floats, expected " + std::to_string(want));
}

}  // namespace

Quantizer::Quantizer(int head_dim, Config config, std::uint64_t seed)
    : state_(fa_tq_init(head_dim,
                        fa_tq_config{config.key_bits, config.value_bits, config.scale, config.scale_format,
                                     config.center, config.center_block, config.sinks, config.smooth, config.score,
                                     config.value_sum},
                        seed)),
      head_dim_(head_dim) {
    if (!state_) throw Error(static_cast<tq_status>(tq_last_status()), fa_tq_last_error());
}

KVCache::KVCache(const Quantizer& quantizer, int num_layers, int num_heads, int max_seq_len, Mode mode)
    : quantizers_(std::size_t(std::max(num_layers, 0)), &quantizer),
      cache_(mode == Mode::ring ? fa_tq_cache_new_ring(quantizer.get(), num_layers, num_heads, max_seq_len)
                                : fa_tq_cache_new(quantizer.get(), num_layers, num_heads, max_seq_len)),
      num_heads_(num_heads) {
    if (!cache_) throw Error(static_cast<tq_status>(tq_last_status()), fa_tq_last_error());
}

KVCache::KVCache(std::span<const Quantizer* const> layers, int num_heads, int max_seq_len, Mode mode)
    : quantizers_(layers.begin(), layers.end()), num_heads_(num_heads) {
    std::vector<const fa_tq_state*> states;
    for (const Quantizer* q : layers) {
        if (!q) throw Error(TQ_ERROR_INVALID_ARGUMENT, "tq::KVCache: a layer's Quantizer is null");
        states.push_back(q->get());
    }
    cache_.reset(fa_tq_cache_new_layers(states.data(), int(states.size()), num_heads, max_seq_len, mode == Mode::ring));
    if (!cache_) throw Error(static_cast<tq_status>(tq_last_status()), fa_tq_last_error());
}

const fa_tq_state* KVCache::state(int layer) const {
    // An out-of-range layer passes a null state, which the C API refuses with a message.
    return layer >= 0 && std::size_t(layer) < quantizers_.size() ? quantizers_[std::size_t(layer)]->get() : nullptr;
}

void KVCache::quantize(int layer, int pos, std::span<const float> vec, Kind kind) {
    check_size("vec", vec.size(), std::size_t(num_heads_) * head_dim());
    check(fa_tq_quantize(state(layer), cache_.get(), layer, pos, vec.data(), kind == Kind::key));
}

void KVCache::dequantize(int layer, int start, int count, Kind kind, std::span<float> out) const {
    if (count < 0) throw Error(TQ_ERROR_INVALID_ARGUMENT, "tq::KVCache::dequantize: count is negative");
    check_size("out", out.size(), std::size_t(count) * num_heads_ * head_dim());
    if (!fa_tq_dequantize(state(layer), cache_.get(), layer, start, count, kind == Kind::key, out.data()))
        throw Error(static_cast<tq_status>(tq_last_status()), fa_tq_last_error());
}

int KVCache::query_heads(std::span<const float> q, std::span<const float> k, std::span<const float> v,
                         std::span<float> out, int n_tokens) const {
    if (n_tokens < 1)
        throw Error(TQ_ERROR_INVALID_ARGUMENT, "tq::KVCache: n_tokens must be >= 1, got " + std::to_string(n_tokens));
    const std::size_t d = head_dim(), kv = std::size_t(num_heads_) * d * std::size_t(n_tokens);
    check_size("k", k.size(), kv);
    check_size("v", v.size(), kv);
    check_size("out", out.size(), q.size());
    const std::size_t row = d * std::size_t(n_tokens);
    if (q.size() % row != 0) check_size("q", q.size(), (q.size() / row + 1) * row);
    return int(q.size() / row);
}

void KVCache::attention(int layer, int pos, std::span<const float> q, std::span<const float> k,
                        std::span<const float> v, std::span<float> out, float softmax_scale) {
    check(fa_tq_attention(state(layer), cache_.get(), layer, pos, q.data(), query_heads(q, k, v, out, 1), k.data(),
                          v.data(), softmax_scale, out.data()));
}

void KVCache::attention_batch(int layer, int pos, int n_tokens, std::span<const float> q, std::span<const float> k,
                              std::span<const float> v, std::span<float> out, float softmax_scale) {
    check(fa_tq_attention_batch(state(layer), cache_.get(), layer, pos, n_tokens, q.data(),
                                query_heads(q, k, v, out, n_tokens), k.data(), v.data(), softmax_scale, out.data()));
}

void KVCache::attention(int layer, int pos, std::span<const float> q, std::span<const float> k,
                        std::span<const float> v, std::span<float> out, const fa_tq_attend_options& options) {
    check(fa_tq_attention_ex(state(layer), cache_.get(), layer, pos, q.data(), query_heads(q, k, v, out, 1), k.data(),
                             v.data(), &options, out.data()));
}

void KVCache::attention_batch(int layer, int pos, int n_tokens, std::span<const float> q, std::span<const float> k,
                              std::span<const float> v, std::span<float> out, const fa_tq_attend_options& options) {
    check(fa_tq_attention_batch_ex(state(layer), cache_.get(), layer, pos, n_tokens, q.data(),
                                   query_heads(q, k, v, out, n_tokens), k.data(), v.data(), &options, out.data()));
}

void KVCache::set_threads(int n_threads) { check(fa_tq_cache_set_threads(cache_.get(), n_threads)); }
void KVCache::set_parallel_for(fa_tq_parallel_for fn, void* ctx) {
    check(fa_tq_cache_set_parallel_for(cache_.get(), fn, ctx));
}
void KVCache::evict(int n) { check(fa_tq_cache_evict(cache_.get(), n)); }
void KVCache::set_window(int window) { check(fa_tq_cache_set_window(cache_.get(), window)); }
void KVCache::truncate(int length) { check(fa_tq_cache_truncate(cache_.get(), length)); }
int KVCache::oldest() const { return fa_tq_cache_oldest(cache_.get()); }
void KVCache::resize(int max_seq_len) { check(fa_tq_cache_resize(cache_.get(), max_seq_len)); }
void KVCache::copy_from(const KVCache& other) { check(fa_tq_cache_copy(cache_.get(), other.cache_.get())); }
std::vector<std::uint8_t> KVCache::serialize() const {
    std::size_t size = 0;
    check(fa_tq_cache_serialize(cache_.get(), nullptr, 0, &size));
    std::vector<std::uint8_t> bytes(size);
    check(fa_tq_cache_serialize(cache_.get(), bytes.data(), bytes.size(), &size));
    return bytes;
}
void KVCache::deserialize(std::span<const std::uint8_t> bytes) {
    check(fa_tq_cache_deserialize(cache_.get(), bytes.data(), bytes.size()));
}
void KVCache::clear() { check(fa_tq_cache_clear(cache_.get())); }
int KVCache::seq_len() const { return fa_tq_cache_seq_len(cache_.get()); }

std::size_t KVCache::bytes_per_token() const {
    std::size_t n = 0;
    check(fa_tq_cache_bytes(cache_.get(), &n, nullptr));
    return n;
}

double KVCache::bytes_per_token_all_in() const { return fa_tq_cache_bytes_per_token_all_in(cache_.get()); }

std::size_t KVCache::bytes_total() const {
    std::size_t n = 0;
    check(fa_tq_cache_bytes(cache_.get(), nullptr, &n));
    return n;
}

}  // namespace tq
