#include "fa_tq_undo.hpp"

#include <algorithm>
#include <cstring>

namespace tq::detail {

LayerUndo::LayerUndo(const fa_tq_cache* cache, int layer, int pos, int n) : layer_(layer) {
    const int slots = std::min(n, cache->max_seq_len);
    for (int i = 0; i < slots; ++i) slots_.push_back(std::size_t(cache->slot(pos + i)));
    const fa_tq_layer& lay = cache->layers[std::size_t(layer)];
    keys_ = save(cache, lay.keys);
    values_ = save(cache, lay.values);
    query_sum_sq_ = lay.query_sum_sq;
    query_count_ = lay.query_count;
}

LayerUndo::Stream LayerUndo::save(const fa_tq_cache* cache, const fa_tq_stream& s) const {
    Stream out{s.length,      s.count,       s.first_block,
               s.blocks,      s.sum,         s.sum_sq,
               s.means.size(), s.smooth.size(), cache->ring ? s.means : std::vector<std::uint16_t>{},
               cache->ring ? s.smooth : std::vector<std::uint16_t>{}, s.sink_vectors, s.scale_bound,
               s.extra_bound, s.smooth_bound, {}, {}, {}};
    for (int h = 0; h < cache->num_heads; ++h)
        for (std::size_t slot : slots_) {
            const std::size_t i = cache->stream_index(h) + slot;
            out.codes.insert(out.codes.end(), &s.codes[i * s.code_bytes], &s.codes[i * s.code_bytes] + s.code_bytes);
            if (!s.scales32.empty()) out.scales32.push_back(s.scales32[i]);
            if (!s.scales16.empty()) out.scales16.push_back(s.scales16[i]);
        }
    return out;
}

void LayerUndo::put(const fa_tq_cache* cache, const Stream& from, fa_tq_stream& s) const {
    s.length = from.length;
    s.count = from.count;
    s.first_block = from.first_block;
    s.blocks = from.blocks;
    s.sum = from.sum;  // same sizes as the stream's: no allocation
    s.sum_sq = from.sum_sq;
    if (cache->ring) {
        s.means = from.means;  // within the capacity reserved at creation: no allocation
        s.smooth = from.smooth;
    } else {
        s.means.resize(from.means_size);  // shrinks
        s.smooth.resize(from.smooth_size);
    }
    s.sink_vectors = from.sink_vectors;
    s.scale_bound = from.scale_bound;
    s.extra_bound = from.extra_bound;
    s.smooth_bound = from.smooth_bound;
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
