// A cache's contents, to check that a failed call changed nothing.
#pragma once

#include "fa_tq_internal.hpp"

#include <cstdint>
#include <vector>

namespace tq::test {

// Everything a call could change.
struct StreamState {
    std::vector<std::uint8_t> codes;
    std::vector<float> scales32, sinks;
    std::vector<std::uint16_t> scales16, means, smooth;
    std::vector<double> sum, sum_sq;
    long length, floor, count, first_block, blocks;
    double scale_bound, extra_bound, smooth_bound;
    explicit StreamState(const fa_tq_stream& s)
        : codes(s.codes.begin(), s.codes.end()), scales32(s.scales32.begin(), s.scales32.end()), sinks(s.sink_vectors),
          scales16(s.scales16.begin(), s.scales16.end()), means(s.means),
          smooth(s.smooth), sum(s.sum), sum_sq(s.sum_sq), length(s.length), floor(s.floor), count(s.count),
          first_block(s.first_block), blocks(s.blocks), scale_bound(s.scale_bound), extra_bound(s.extra_bound),
          smooth_bound(s.smooth_bound) {}
    bool operator==(const StreamState&) const = default;
};

struct Snapshot {
    std::vector<StreamState> streams;
    std::vector<std::vector<double>> query_sum_sq;  // per layer, what smoothing learned of the queries
    std::vector<long> query_count;
    long evicted;
    int max_seq_len, window;
    // The attention executor.
    int pool_threads;
    fa_tq_parallel_for parallel_for;
    void* parallel_ctx;
    explicit Snapshot(const fa_tq_cache* c)
        : evicted(c->evicted), max_seq_len(c->max_seq_len), window(c->window), pool_threads(c->pool ? c->pool->threads() : 0), parallel_for(c->parallel_for),
          parallel_ctx(c->parallel_ctx) {
        for (const fa_tq_layer& l : c->layers) {
            streams.emplace_back(l.keys);
            streams.emplace_back(l.values);
            query_sum_sq.push_back(l.query_sum_sq);
            query_count.push_back(l.query_count);
        }
    }
    bool operator==(const Snapshot&) const = default;
};

}  // namespace tq::test
