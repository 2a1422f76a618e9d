#include "fa_tq_undo.hpp"

#include <algorithm>
#include <cstring>

namespace tq::detail {

void LayerUndo::capture(const fa_tq_cache* cache, int layer, int pos, int n) {
    layer_ = layer;
    const int slots = std::min(n, cache->max_seq_len);
    slots_.clear();
    for (int i = 0; i < slots; ++i) slots_.push_back(std::size_t(cache->slot(pos + i)));
    const fa_tq_layer& lay = cache->layers[std::size_t(layer)];
    save(cache, lay.keys, keys_);
    save(cache, lay.values, values_);
    query_sum_sq_ = lay.query_sum_sq;
    query_count_ = lay.query_count;
}

namespace {

// The small state a Stream keeps under the stream's own names, copied either way (copy
// assignments keep the destination's capacity: no allocation once it has grown, and
// none into the stream, whose sizes these are).
template <class From, class To>
void copy_small_state(const From& from, To& to) {
    to.length = from.length;
    to.count = from.count;
    to.first_block = from.first_block;
    to.blocks = from.blocks;
    to.sum = from.sum;
    to.sum_sq = from.sum_sq;
    to.sink_vectors = from.sink_vectors;
    to.scale_bound = from.scale_bound;
    to.extra_bound = from.extra_bound;
    to.smooth_bound = from.smooth_bound;
}

}  // namespace

void LayerUndo::save(const fa_tq_cache* cache, const fa_tq_stream& s, Stream& out) const {
    copy_small_state(s, out);
    out.means_size = s.means.size();
    out.smooth_size = s.smooth.size();
    out.means.clear();
    out.smooth.clear();
    if (cache->ring) {
        out.means = s.means;
        out.smooth = s.smooth;
    }
    const std::size_t kept = std::size_t(cache->num_heads) * slots_.size();
    out.codes.resize(kept * s.code_bytes);
    out.scales32.resize(s.scales32.empty() ? 0 : kept);
    out.scales16.resize(s.scales16.empty() ? 0 : kept);
    std::size_t k = 0;
    for (int h = 0; h < cache->num_heads; ++h)
        for (std::size_t slot : slots_) {
            const std::size_t i = cache->stream_index(h) + slot;
            std::memcpy(&out.codes[k * s.code_bytes], &s.codes[i * s.code_bytes], s.code_bytes);
            if (!s.scales32.empty()) out.scales32[k] = s.scales32[i];
            if (!s.scales16.empty()) out.scales16[k] = s.scales16[i];
            ++k;
        }
}

void LayerUndo::put(const fa_tq_cache* cache, const Stream& from, fa_tq_stream& s) const {
    copy_small_state(from, s);
    if (cache->ring) {
        s.means = from.means;  // within the capacity reserved at creation: no allocation
        s.smooth = from.smooth;
    } else {
        s.means.resize(from.means_size);  // shrinks
        s.smooth.resize(from.smooth_size);
    }
    std::size_t k = 0;
    for (int h = 0; h < cache->num_heads; ++h)
        for (std::size_t slot : slots_) {
            const std::size_t i = cache->stream_index(h) + slot;
            std::memcpy(&s.codes[i * s.code_bytes], &from.codes[k * s.code_bytes], s.code_bytes);
            if (!s.scales32.empty()) s.scales32[i] = from.scales32[k];
            if (!s.scales16.empty()) s.scales16[i] = from.scales16[k];
            ++k;
        }
}

void LayerUndo::restore(fa_tq_cache* cache) const {
    fa_tq_layer& lay = cache->layers[std::size_t(layer_)];
    put(cache, keys_, lay.keys);
    put(cache, values_, lay.values);
    lay.query_sum_sq = query_sum_sq_;
    lay.query_count = query_count_;
}

}  // namespace tq::detail
