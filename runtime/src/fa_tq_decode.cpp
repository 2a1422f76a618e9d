// Decode: one query token attends over its visible slots, split by KV head and along
// the sequence (flash-decoding), each query head's chunks merged by log-sum-exp.
#include "fa_tq_chunk_attention.hpp"

#include "last_error.hpp"

#include <new>
#include <string>

namespace tq::detail {
namespace {

// One decode call's flash-decoding: task (g, c) runs KV head g's query heads over
// chunk c; merge() combines each query head's chunks and writes out.
struct DecodeJob {
    const ChunkAttention& attend;
    const fa_tq_stream &keys, &values;
    const Chunking& chunks;
    std::size_t n;
    int d;
    bool f16;
    float *key_scales, *value_scales;  // [kv_head][n]: halves widened by each chunk's task
    float* scores;                     // [task][group][chunks.longest]
    float* q_smooth;                   // [task][group + 2][d]
    float* acc;                        // [query head][chunk][d]
    double* extra;                     // [query head][chunk][d]
    Partial* partials;                 // [query head][chunk]

    static void task(void* arg, int index) { static_cast<const DecodeJob*>(arg)->run(index); }

    void run(int index) const {
        const std::size_t t = std::size_t(index), g = t / chunks.count, c = t % chunks.count;
        const std::size_t c0 = chunks.bounds[c], c1 = chunks.bounds[c + 1];
        const float* ks = widen(keys, g, c0, c1, key_scales);
        const float* vs = widen(values, g, c0, c1, value_scales);
        const std::size_t p = g * std::size_t(attend.group) * chunks.count + c;  // (first head of g, chunk c)
        attend.run(int(g), ks, vs, c0, c1, scores + t * attend.group * chunks.longest,
                   q_smooth + t * (attend.group + 2) * d,
                   {acc + p * d, extra + p * d, chunks.count, partials + p, chunks.count});
    }

    // KV head g's scales as floats, slots [c0, c1) made ready.
    const float* widen(const fa_tq_stream& s, std::size_t g, std::size_t c0, std::size_t c1, float* buf) const {
        const std::size_t base = attend.cache->stream_index(int(g));
        if (!f16) return &s.scales32[base];
        float* head = buf + g * n;
        attend.ops.widen(&s.scales16[base + c0], c1 - c0, head + c0);
        return head;
    }

    // The merge as tasks, one per query head: buffers [head][d] and [head][2d], out [head][d].
    struct Merge {
        const DecodeJob* job;
        float* merged;
        double* merged_extra;
        float* out;
        static void task(void* arg, int h) {
            const Merge& m = *static_cast<const Merge*>(arg);
            const std::size_t d = std::size_t(m.job->d);
            m.job->merge(h, m.merged + h * d, m.merged_extra + 2 * h * d, m.out + h * d);
        }
    };

    // Query head h's output: its chunks merged by log-sum-exp (exact for one chunk).
    void merge(int h, float* merged, double* merged_extra, float* out) const {
        const tq_kernels& kern = *attend.state->kernels;
        const Partial* p = partials + std::size_t(h) * chunks.count;
        const float* a = acc + std::size_t(h) * chunks.count * d;
        const double* e = extra + std::size_t(h) * chunks.count * d;
        if (chunks.count == 1) {
            kern.unrotate(attend.state->signs.data(), a, out);
            const float share = float(attend.sink_share(h, p[0].max, p[0].sum));
            for (int i = 0; i < d; ++i) out[i] = (out[i] + float(e[i])) * share;
            return;
        }
        float m = p[0].max;
        for (std::size_t c = 1; c < chunks.count; ++c) m = std::max(m, p[c].max);
        double total = 0;
        for (std::size_t c = 0; c < chunks.count; ++c) total += p[c].sum * std::exp(double(p[c].max) - m);
        std::fill(merged_extra, merged_extra + 2 * d, 0.0);  // [0, d): acc, [d, 2d): extra
        for (std::size_t c = 0; c < chunks.count; ++c) {
            const double w = p[c].sum * std::exp(double(p[c].max) - m) / total;
            for (int i = 0; i < d; ++i) {
                merged_extra[i] += w * a[c * d + i];
                merged_extra[d + i] += w * e[c * d + i];
            }
        }
        for (int i = 0; i < d; ++i) merged[i] = float(merged_extra[i]);
        kern.unrotate(attend.state->signs.data(), merged, out);
        const float share = float(attend.sink_share(h, m, total));
        for (int i = 0; i < d; ++i) out[i] = (out[i] + float(merged_extra[d + i])) * share;
    }
};

}  // namespace

int reserve_decode(const char* fn, const fa_tq_cache* cache, const fa_tq_layer& lay, int pos, int n_q_heads) {
    const int kv_heads = cache->num_heads, d = lay.head_dim;
    const std::size_t n = static_cast<std::size_t>(std::min(pos + 1, cache->max_seq_len));
    const bool f16 = lay.levers.f16_scales;
    Scratch& s = attend_scratch();
    try {
        cut_pieces(cache, lay, cache->first_visible(lay, pos), pos, s.pieces);
        const Chunking& chunks = s.chunks = chunking(n, cache->parallel(), kv_heads, s.pieces);
        const std::size_t tasks = std::size_t(kv_heads) * chunks.count, parts = std::size_t(n_q_heads) * chunks.count;
        s.resize(std::size_t(n_q_heads), tasks, std::size_t(n_q_heads / kv_heads), chunks.longest, parts,
                 f16 ? std::size_t(kv_heads) * n : 0, d);
        s.merged.resize(std::size_t(n_q_heads) * d);
        s.merged_extra.resize(2 * std::size_t(n_q_heads) * d);
    } catch (const std::bad_alloc&) {
        return fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory for " + std::to_string(n) + " scores");
    }
    return FA_TQ_OK;
}

void attend_decode(const fa_tq_state* state, const fa_tq_cache* cache, const fa_tq_layer& lay, int pos,
                   const float* q, int n_q_heads, float scale, const Shaping& shaping, float* out) {
    const int kv_heads = cache->num_heads, d = state->head_dim;
    const std::size_t n = static_cast<std::size_t>(std::min(pos + 1, cache->max_seq_len));
    Scratch& s = attend_scratch();
    const Chunking& chunks = s.chunks;
    rotate_queries(state, q, std::size_t(n_q_heads), scale, s.q_rot.data());
    const ChunkAttention attend{state, cache, lay, s.pieces, q, s.q_rot.data(), scale, n_q_heads / kv_heads,
                                chunks.wrap, softmax_for(state->kernels->isa), attend_ops_for(state->kernels->isa),
                                cache->first_visible(lay, pos) > long(pos) + 1 - long(n), shaping, long(pos)};
    const DecodeJob job{attend,
                        lay.keys,
                        lay.values,
                        chunks,
                        n,
                        d,
                        lay.levers.f16_scales,
                        s.key_scales.data(),
                        s.value_scales.data(),
                        s.scores.data(),
                        s.q_smooth.data(),
                        s.acc.data(),
                        s.extra.data(),
                        s.partials.data()};
    cache->run_tasks(int(std::size_t(kv_heads) * chunks.count), &DecodeJob::task, const_cast<DecodeJob*>(&job));
    const DecodeJob::Merge merge{&job, s.merged.data(), s.merged_extra.data(), out};
    if (chunks.count == 1)  // nothing to merge: each head's unrotation, on this thread
        for (int h = 0; h < n_q_heads; ++h) DecodeJob::Merge::task(const_cast<DecodeJob::Merge*>(&merge), h);
    else
        cache->run_tasks(n_q_heads, &DecodeJob::Merge::task, const_cast<DecodeJob::Merge*>(&merge));
}

}  // namespace tq::detail
