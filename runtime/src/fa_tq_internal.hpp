// The structures behind the opaque fa_tq_state and fa_tq_cache handles.
#pragma once

#include "cache_line_allocator.hpp"
#include "thread_pool.hpp"
#include "turboquant/turboquant.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

// The quality levers of a config, resolved (no "default" left).
struct fa_tq_levers {
    bool f16_scales;     // scales stored as IEEE half (else float)
    bool center_keys;    // subtract a running mean per (layer, KV head) before quantizing
    bool center_values;
    bool smooth_keys;    // divide key channels by per-block scales learned from queries and keys
    int center_block;    // positions per block of means and smoothing scales (a power of two)
    int sinks;           // the first `sinks` positions are kept exact (float)
    bool operator==(const fa_tq_levers&) const = default;
};

struct fa_tq_state {
    int head_dim;
    int key_eighths;    // bits per coordinate, in eighths
    int value_eighths;
    int scale_kind;  // tq_scale_kind, resolved from fa_tq_config::scale
    std::uint64_t seed;
    fa_tq_levers levers;
    const tq_kernels* kernels;
    std::vector<float> signs;  // ±1/sqrt(head_dim)
    tq_score_fn score;         // kernels->key->score or ->score_int, from fa_tq_config::score
    tq_accumulate_fn value_sum;  // kernels->value->accumulate or ->accumulate_int, from fa_tq_config::value_sum
};

// One kind (keys or values) of one layer: per KV head a stream of max_seq_len
// packed codes and one of max_seq_len scales, plus the centering means and the
// exact sink vectors.
struct fa_tq_stream {
    std::size_t code_bytes = 0;
    bool centered = false;
    std::vector<std::uint8_t, tq::detail::CacheLineAllocator<std::uint8_t>> codes;  // [head][slot][code_bytes]
    std::vector<float, tq::detail::CacheLineAllocator<float>> scales32;                 // [head][slot], when scales are float
    std::vector<std::uint16_t, tq::detail::CacheLineAllocator<std::uint16_t>> scales16; // [head][slot], when half
    int length = 0;                      // positions written (absolute in ring mode)
    int floor = 0;  // a ring's positions below it were overwritten by positions a truncate removed
    // Centering and smoothing (docs/levers.md): running sums over every appended
    // non-sink vector, and per block of positions (blocks first_block ..
    // first_block + blocks - 1) the mean and the channel scales its vectors were
    // encoded with (half floats).
    bool smoothed = false;
    std::vector<double> sum, sum_sq;     // [head][d]
    long count = 0;
    long first_block = 0, blocks = 0;
    std::vector<std::uint16_t> means;    // [block][head][d], when centered
    std::vector<std::uint16_t> smooth;   // [block][head][d], when smoothed
    std::vector<float> sink_vectors;     // [head][sink][d]
    // Attention's range check reads these bounds, kept over everything stored since
    // the last clear, instead of walking the stream on every call.
    double scale_bound = 0;   // the largest |scale|
    double extra_bound = 0;   // the largest norm of a block mean or a sink vector
    double smooth_bound = 1;  // the largest smoothing scale (1: none)
};

// A layer: the quantizer it was made for (calls with another are refused) and its streams.
struct fa_tq_layer {
    int head_dim, key_eighths, value_eighths, scale_kind;
    std::uint64_t seed;
    fa_tq_levers levers;
    fa_tq_stream keys, values;
    // Smoothing: the running sum of squared query channels per KV head, over its
    // group's query heads, and how many query vectors that is per KV head.
    std::vector<double> query_sum_sq;  // [head][d]
    long query_count = 0;

    fa_tq_stream& stream(bool is_key) { return is_key ? keys : values; }
    const fa_tq_stream& stream(bool is_key) const { return is_key ? keys : values; }
};

struct fa_tq_cache {
    int num_layers, num_heads, max_seq_len;
    bool ring;
    long evicted = 0;  // positions dropped by evict since the last clear (absolute = pos + evicted)
    int window = 0;    // attention sees the last `window` positions (fa_tq_cache_set_window); 0: all held
    std::vector<fa_tq_layer> layers;
    // Attention's executor (fa_tq_cache_set_threads): none, the own pool, or the engine's.
    std::unique_ptr<tq::detail::ThreadPool> pool;
    fa_tq_parallel_for parallel_for = nullptr;
    void* parallel_ctx = nullptr;

    bool parallel() const { return pool || parallel_for; }
    // task(arg, i) for i in [0, n_tasks) on the executor (inline when there is none).
    void run_tasks(int n_tasks, void (*task)(void*, int), void* arg) const {
        if (pool) pool->run(n_tasks, task, arg);
        else if (parallel_for && n_tasks > 1) parallel_for(parallel_ctx, n_tasks, task, arg);
        else for (int i = 0; i < n_tasks; ++i) task(arg, i);
    }

    // Index of (head, slot) in a stream's per-slot arrays.
    std::size_t stream_index(int head) const { return static_cast<std::size_t>(head) * max_seq_len; }
    int slot(int pos) const { return ring ? pos % max_seq_len : pos; }
    // The oldest position a stream still holds: a ring's last max_seq_len, less what a
    // truncate's removed positions had overwritten; a linear cache holds from 0.
    int oldest(const fa_tq_stream& s) const { return ring ? std::max({0, s.floor, s.length - max_seq_len}) : 0; }
    // The first position that attention at pos (written, or about to be) sees in a
    // layer: the window's, the ring's last max_seq_len, and what a truncate left.
    long first_visible(const fa_tq_layer& lay, int pos) const {
        const long w = window > 0 ? long(pos) + 1 - window : 0, r = ring ? long(pos) + 1 - max_seq_len : 0;
        return std::max({0L, w, r, long(lay.keys.floor), long(lay.values.floor)});
    }
};
