// What writing positions pos..pos+n-1 can change in one layer, kept so that a
// batch refused part-way (a later token out of range) leaves the cache as it
// was: every stream's small state (running sums, sinks, bounds; the block data's
// sizes, or in a ring a copy), and the codes and scales of the slots those
// positions take.  One object per thread keeps its buffers from call to call, so a
// thread's batches allocate (and fault in fresh pages) only when they grow; it holds
// its largest capture until the thread exits, as the attention scratch does, and no
// other batch may run on the thread between capture and restore (turboquant.h's
// executor contract).
#pragma once

#include "fa_tq_internal.hpp"

#include <cstdint>
#include <vector>

namespace tq::detail {

class LayerUndo {
public:
    // Keeps what writing positions pos..pos+n-1 of the layer can change, in place of
    // what it kept before.  Throws std::bad_alloc.
    void capture(const fa_tq_cache* cache, int layer, int pos, int n);
    void restore(fa_tq_cache* cache) const;

private:
    struct Stream {
        int length;
        long count, first_block, blocks;
        std::vector<double> sum, sum_sq;
        // A linear cache only appends block data: its sizes suffice.  A ring also
        // drops blocks at the front: a copy.
        std::size_t means_size, smooth_size;
        std::vector<std::uint16_t> means, smooth;
        std::vector<float> sink_vectors;
        double scale_bound, extra_bound, smooth_bound;
        std::vector<std::uint8_t> codes;      // [head][slot of slots_]
        std::vector<float> scales32;          // [head][slot of slots_]
        std::vector<std::uint16_t> scales16;
    };
    void save(const fa_tq_cache* cache, const fa_tq_stream& s, Stream& out) const;
    void put(const fa_tq_cache* cache, const Stream& from, fa_tq_stream& s) const;

    int layer_ = 0;
    std::vector<std::size_t> slots_;
    Stream keys_{}, values_{};
    std::vector<double> query_sum_sq_;
    long query_count_ = 0;
};

}  // namespace tq::detail
