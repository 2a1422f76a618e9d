// Prefill: a chunk of query tokens attends causally over the cache, in tiles of query
// rows per KV head that walk the slots in spans (online softmax), fused or dense.
#include "fa_tq_chunk_attention.hpp"

#include "last_error.hpp"

#include <new>
#include <string>

namespace tq::detail {
namespace {

// A prefill call.  KV head g's query rows (token x query head of its group) are cut
// into tiles of about kTileRows rows (whole tokens); task (g, k) runs tiles k, k + T,
// ... (T tile tasks per KV head, so that the scratch stays bounded and the causal
// tiles' unequal work spreads over the tasks).  A tile walks the visible slots in
// spans of kSpan: per piece one score-kernel call and one value-kernel call for all
// of the tile's rows that see the span, so each key and value is unpacked once per
// pass of the kernels' query block and read from memory once per tile.  Each row keeps
// a running max, sum and normalized output across spans (online softmax): a span's
// weights are exp(s - m) / total and the row's output so far is scaled by
// old_sum exp(old_max - m) / total, both at most 1.  A tile of kDenseRows rows or more
// decodes each block of slots past the first span once and multiplies densely
// (DenseRun), the levers applied to the decoded keys and values.
struct PrefillJob {
    static constexpr std::size_t kTileRows = 256;
    static constexpr std::size_t kSpan = FA_TQ_PARALLEL_CHUNK;
    static constexpr std::size_t kMaxTasks = 128;
    static constexpr std::size_t kDenseRows = 16;  // tiles of at least this many rows decode their spans

    // Slots decoded at once by a dense tile: about 8192 floats per buffer, a multiple of 16.
    static std::size_t dense_block(int d) { return std::clamp<std::size_t>(8192 / std::size_t(d) / 16 * 16, 16, 64); }

    const ChunkAttention& at;  // pieces, sinks, softmax, ops (its q and q_rot are unused)
    int pos, n_tokens, n_q_heads, d;
    const float* q;      // [token][query head][d], as given
    const float* q_rot;  // [kv head][token][group][d], scale * R q
    const float* key_scales;    // [kv_head][n] as floats
    const float* value_scales;
    std::size_t n, tile_tokens, tiles, tile_tasks;
    float* scores;    // [task][tile rows][kSpan]
    float* q_smooth;  // [task][tile rows + 2][d]
    float* decoded;   // [task][2][dense_block][d]: a dense tile's decoded keys or values, the keys transposed
    float* acc;       // [kv head][token][group][d], running and normalized (rotated domain; original past a dense tile's first span)
    double* extra;    // [kv head][token][group][d], running (original domain: means and sinks)
    Partial* running; // [kv head][token][group]
    float* out;

    // Query tokens per tile and tile tasks per KV head, for a call's shape.
    static std::size_t tokens_per_tile(int group) { return std::max<std::size_t>(1, kTileRows / std::size_t(group)); }
    static std::size_t tasks_per_head(std::size_t tiles, int kv_heads) {
        return std::min(tiles, std::max<std::size_t>(1, kMaxTasks / std::size_t(kv_heads)));
    }

    static void task(void* arg, int index) { static_cast<const PrefillJob*>(arg)->run(index); }

    void run(int index) const {
        const std::size_t t = std::size_t(index), g = t / tile_tasks, rows = tile_tokens * std::size_t(at.group);
        for (std::size_t tile = t % tile_tasks; tile < tiles; tile += tile_tasks)
            run_tile(int(g), tile, scores + t * rows * kSpan, q_smooth + t * (rows + 2) * std::size_t(d),
                     decoded + t * 2 * dense_block(d) * std::size_t(d));
    }

    // A dense span's keys (or values) of consecutive slots, decoded into a tile's buffer
    // across the span's pieces (each with its own levers) and multiplied a block of up to
    // dense_block(d) slots at a time: when the block is full, where the next piece's slots
    // do not follow on, and at the span's end.  Keys: the scores of m query rows (rows:
    // [m][d], original domain, scaled), slot t of row r to out[r * kSpan + t - c0].
    // Values: acc row r (out + r * d) += the sum over the slots t of rows[r * kSpan + t - c0]
    // (the weights) times the value.
    struct DenseRun {
        const float* rows;
        std::size_t m, c0;
        float* out;
        float* dec;                 // 2 * dense_block(d) * d floats: the block, then the keys transposed
        std::size_t stream;         // the KV head's first stream slot
        const float* scales;        // the KV head's, per slot
        std::size_t first = 0, count = 0;  // slots [first, first + count) decoded, not yet multiplied
    };

    // Decodes slots [s0, s1) of one piece of stream s into run's block, mapped back by the
    // piece's levers (x = mul * x' + add; mul or add null where the piece has none), and
    // multiplies the block (flush) when it is full or where these slots do not follow on.
    template <class Flush>
    void decode_into(DenseRun& run, const tq_bit_kernels& kern, const fa_tq_stream& s, std::size_t s0, std::size_t s1,
                     const float* mul, const float* add, Flush flush) const {
        const std::size_t block = dense_block(d), dim = std::size_t(d);
        if (run.count > 0 && run.first + run.count != s0) flush(run);
        while (s0 < s1) {
            if (run.count == 0) run.first = s0;
            const std::size_t take = std::min(s1 - s0, block - run.count);
            float* x = run.dec + run.count * dim;
            for (std::size_t u = 0; u < take; ++u)
                kern.decode(at.state->signs.data(), &s.codes[(run.stream + s0 + u) * s.code_bytes], run.scales[s0 + u],
                            x + u * dim);
            if (mul || add) at.ops.affine_rows(x, take, dim, mul, add);
            run.count += take;
            s0 += take;
            if (run.count == block) flush(run);
        }
    }

    // The pending keys' scores: transposed (padded with zeros to a multiple of 16) and multiplied.
    void flush_keys(DenseRun& run) const {
        if (run.count == 0) return;
        const std::size_t dim = std::size_t(d), padded = (run.count + 15) / 16 * 16;
        float* transposed = run.dec + dense_block(d) * dim;
        at.ops.transpose(run.dec, run.count, dim, transposed, padded);
        at.state->kernels->product(run.m, run.count, dim, run.rows, dim, transposed, padded, run.out + (run.first - run.c0),
                                   kSpan, 0);
        run.count = 0;
    }

    // The pending values' weighted sums, added to the acc rows (the product reads each value
    // row whole: every head dim is a multiple of 16).
    void flush_values(DenseRun& run) const {
        if (run.count == 0) return;
        const std::size_t dim = std::size_t(d);
        at.state->kernels->product(run.m, dim, run.count, run.rows + (run.first - run.c0), kSpan, run.dec, dim, run.out,
                                   dim, 1);
        run.count = 0;
    }

    void run_tile(int g, std::size_t tile, float* sc, float* qs, float* dec) const {
        const tq_kernels& kern = *at.state->kernels;
        const fa_tq_stream& ks = at.lay.keys;
        const fa_tq_stream& vs = at.lay.values;
        const int group = at.group, i0 = int(tile * tile_tokens), i1 = std::min(n_tokens, i0 + int(tile_tokens));
        const std::size_t rows = std::size_t(i1 - i0) * group, base = (std::size_t(g) * n_tokens + i0) * group;
        const std::size_t sbase = at.cache->stream_index(g), hd = std::size_t(g) * d;
        const float* kscale = key_scales + g * n;
        const float* vscale = value_scales + g * n;
        float* smooth = qs + rows * d;  // a block's smoothing scales, then its mean, widened
        float* mean = smooth + d;
        // A dense tile runs its first span with the fused kernels all the same where a row
        // may see no more: such a row gets the single calls' bits (the batch's outputs do
        // not depend on how a sequence's tokens were split into calls); its acc is then
        // unrotated in place, and the later spans are dense.  Where even the tile's first
        // token sees past the first span, every span is dense.
        const bool dense = rows >= kDenseRows, dense_from_start = dense && std::size_t(pos + i0) >= kSpan;
        bool prepared = false, prepared_rotated = false;  // whether qs holds the tile's queries, and how
        const std::uint16_t* prepared_for = nullptr;       // the record they are smoothed by
        // Row r: token i0 + r / group, query head g * group + r % group, as given.
        auto query = [&](std::size_t r) {
            return q + (std::size_t(i0) + r / group) * n_q_heads * d + (std::size_t(g) * group + r % group) * d;
        };
        // qs's rows: softmax_scale (q * sigma), rotated or not (sigma = 1 where sm is null).
        auto prepare = [&](const std::uint16_t* sm, bool rotated) {
            if (prepared && prepared_for == sm && prepared_rotated == rotated) return;
            if (sm) at.ops.widen(sm + hd, std::size_t(d), smooth);
            for (std::size_t r = 0; r < rows; ++r) {  // the attend ops' loops: vectorized, the same bits
                float* qr = qs + r * d;
                std::copy(query(r), query(r) + d, qr);
                if (sm) at.ops.affine_rows(qr, 1, std::size_t(d), smooth, nullptr);
                if (rotated) kern.rotate(at.state->signs.data(), qr, qr);
                at.ops.scale(qr, std::size_t(d), at.scale);
            }
            prepared = true;
            prepared_for = sm;
            prepared_rotated = rotated;
        };
        const std::size_t needed = std::size_t(pos + i1);  // slots the tile's last token sees
        for (std::size_t c0 = 0; c0 < needed; c0 += kSpan) {
            const std::size_t c1 = std::min(needed, c0 + kSpan);
            const bool dense_span = dense && (c0 > 0 || dense_from_start);
            // Tokens i >= first see slots of the span (slot < pos + i + 1): rows r0.. of the tile.
            const int first = std::max(i0, int(long(c0) - pos));
            const std::size_t r0 = std::size_t(first - i0) * group, active = rows - r0;
            const auto runs = at.candidates(c0, c1);
            DenseRun dense_keys{qs + r0 * d, active, c0, sc + r0 * kSpan, dec, sbase, kscale};
            std::size_t s0, s1;
            auto span = [&](const Piece& pc) {
                s0 = std::max(pc.slot_begin, c0);
                s1 = std::min(slot_end(pc), c1);
                return s0 < s1;
            };
            for (auto [b, e] : runs)
                for (std::size_t ip = b; ip < e; ++ip) {
                    const Piece& pc = at.pieces[ip];
                    if (!span(pc)) continue;
                    float* s = sc + (s0 - c0);  // row r at s + r * kSpan
                    if (pc.sink) {
                        for (std::size_t r = r0; r < rows; ++r)
                            for (std::size_t t = s0; t < s1; ++t)
                                s[r * kSpan + (t - s0)] =
                                    float(at.scale * at.ops.dot(query(r), at.sink(ks, g, pc, t), std::size_t(d)));
                        continue;
                    }
                    const BlockData stored = stored_block(at.cache, at.lay, ks, pc.pos_begin);
                    if (dense_span) {  // the scaled queries once; sigma and mu go with the decoded keys
                        prepare(nullptr, false);
                        if (stored.smooth) at.ops.widen(stored.smooth + hd, std::size_t(d), smooth);
                        if (stored.mean) at.ops.widen(stored.mean + hd, std::size_t(d), mean);
                        decode_into(dense_keys, *kern.key, ks, s0, s1, stored.smooth ? smooth : nullptr,
                                    stored.mean ? mean : nullptr, [this](DenseRun& run) { flush_keys(run); });
                        continue;
                    }
                    const float* queries = q_rot + base * d;
                    if (stored.smooth) {
                        prepare(stored.smooth, true);  // every row of the tile, once per block
                        queries = qs;
                    }
                    at.state->score(queries + r0 * d, active, &ks.codes[(sbase + s0) * ks.code_bytes], kscale + s0,
                                    s1 - s0, s + r0 * kSpan, kSpan);
                    if (stored.mean) {  // the fused kernels' scores: the mean's, added per row
                        at.ops.widen(stored.mean + hd, std::size_t(d), mean);
                        for (std::size_t r = r0; r < rows; ++r) {
                            const float offset = float(at.scale * at.ops.dot(query(r), mean, std::size_t(d)));
                            for (std::size_t t = 0; t < s1 - s0; ++t) s[r * kSpan + t] += offset;
                        }
                    }
                }
            flush_keys(dense_keys);
            if (at.shaping.shapes_scores())
                for (auto [b, e] : runs)
                    for (std::size_t ip = b; ip < e; ++ip) {
                        if (!span(at.pieces[ip])) continue;
                        for (std::size_t r = r0; r < rows; ++r) {
                            const long qpos = long(pos) + i0 + long(r / group);  // slots past it: no weight
                            const std::size_t t1 = std::min(s1, std::size_t(qpos + 1));
                            if (t1 > s0)
                                at.shape(sc + r * kSpan + (s0 - c0), g * group + int(r % group), qpos, at.pieces[ip],
                                         s0, t1);
                        }
                    }
            // Each row's softmax over the slots its token sees, folded into its running state.
            for (std::size_t r = r0; r < rows; ++r) {
                const int i = i0 + int(r / group);
                const std::size_t seen = std::min(c1, std::size_t(pos + i + 1)) - c0;
                float* row = sc + r * kSpan;
                Partial& run = running[base + r];
                float* a = acc + (base + r) * d;
                double* e = extra + (base + r) * d;
                const float span_max = at.softmax.max(row, seen);
                const float m = c0 == 0 ? span_max : std::max(run.max, span_max);
                const double sum = at.softmax.exp_sum(row, seen, m);
                const double old = c0 == 0 ? 0 : run.sum * std::exp(double(run.max) - m), total = old + sum;
                if (c0 == 0) {
                    std::fill(a, a + d, 0.0f);
                    std::fill(e, e + d, 0.0);
                } else {
                    at.ops.rescale(a, e, std::size_t(d), old / total);
                }
                at.ops.scale(row, seen, static_cast<float>(1 / total));
                std::fill(row + seen, row + (c1 - c0), 0.0f);  // slots past the token: no weight
                run = {m, total};
            }
            // The values, each unpacked once per query block of the active rows.
            DenseRun dense_values{sc + r0 * kSpan, active, c0, acc + (base + r0) * d, dec, sbase, vscale};
            for (auto [b, e] : runs)
                for (std::size_t ip = b; ip < e; ++ip) {
                    const Piece& pc = at.pieces[ip];
                    if (!span(pc)) continue;
                    const float* w = sc + (s0 - c0);  // row r's weights at w + r * kSpan
                    if (pc.sink) {
                        for (std::size_t r = r0; r < rows; ++r) {
                            double* ex = extra + (base + r) * d;
                            for (std::size_t t = s0; t < s1; ++t) {
                                const float* v = at.sink(vs, g, pc, t);
                                for (int i = 0; i < d; ++i) ex[i] += double(w[r * kSpan + (t - s0)]) * v[i];
                            }
                        }
                        continue;
                    }
                    const std::uint16_t* stored = stored_block(at.cache, at.lay, vs, pc.pos_begin).mean;
                    if (stored) at.ops.widen(stored + hd, std::size_t(d), mean);
                    if (dense_span) {  // the mean added to the decoded values
                        decode_into(dense_values, *kern.value, vs, s0, s1, nullptr, stored ? mean : nullptr,
                                    [this](DenseRun& run) { flush_values(run); });
                        continue;
                    }
                    at.state->value_sum(w + r0 * kSpan, kSpan, active, &vs.codes[(sbase + s0) * vs.code_bytes],
                                        vscale + s0, s1 - s0, acc + (base + r0) * d, std::size_t(d));
                    if (stored) {  // the fused kernel's weights: the mean's share, per row
                        for (std::size_t r = r0; r < rows; ++r) {
                            double* ex = extra + (base + r) * d;
                            double wsum = 0;
                            for (std::size_t t = 0; t < s1 - s0; ++t) wsum += w[r * kSpan + t];
                            for (int i = 0; i < d; ++i) ex[i] += wsum * mean[i];
                        }
                    }
                }
            flush_values(dense_values);
            if (dense && c0 == 0 && !dense_from_start)  // every row saw the first span: its acc to the original domain
                for (std::size_t r = 0; r < rows; ++r)
                    kern.unrotate(at.state->signs.data(), acc + (base + r) * d, acc + (base + r) * d);
        }
        for (std::size_t r = 0; r < rows; ++r) {
            float* o = out + (query(r) - q);
            if (dense)
                std::copy(acc + (base + r) * d, acc + (base + r + 1) * d, o);
            else
                kern.unrotate(at.state->signs.data(), acc + (base + r) * d, o);
            const Partial& run = running[base + r];
            const float share = float(at.sink_share(g * group + int(r % group), run.max, run.sum));
            for (int j = 0; j < d; ++j) o[j] = (o[j] + float(extra[(base + r) * d + j])) * share;
        }
    }
};

// KV head g's scales of slots [0, n) as floats: the stream's own, or halves widened into buf.
const float* widen_all(const ChunkAttention& at, const fa_tq_stream& s, bool f16, std::size_t n, float* buf) {
    if (!f16) return s.scales32.data();
    for (int g = 0; g < at.cache->num_heads; ++g) {
        const std::size_t base = at.cache->stream_index(g);
        at.ops.widen(&s.scales16[base], n, buf + std::size_t(g) * n);
    }
    return buf;
}

}  // namespace

int reserve_prefill(const char* fn, const fa_tq_cache* cache, const fa_tq_layer& lay, int pos, int n_tokens,
                    int n_q_heads) {
    const int kv_heads = cache->num_heads, d = lay.head_dim, group = n_q_heads / kv_heads;
    const std::size_t n = std::size_t(pos) + std::size_t(n_tokens);
    const std::size_t tile_tokens = PrefillJob::tokens_per_tile(group);
    const std::size_t tiles = (std::size_t(n_tokens) + tile_tokens - 1) / tile_tokens;
    const std::size_t tasks = std::size_t(kv_heads) * PrefillJob::tasks_per_head(tiles, kv_heads);
    const std::size_t rows = std::size_t(n_tokens) * n_q_heads;
    const bool f16 = lay.levers.f16_scales;
    Scratch& s = attend_scratch();
    try {
        s.resize(rows, tasks, tile_tokens * group, PrefillJob::kSpan, rows, f16 ? std::size_t(kv_heads) * n : 0, d);
        s.decoded.resize(tasks * 2 * PrefillJob::dense_block(d) * std::size_t(d));
        cut_pieces(cache, lay, 0, long(n) - 1, s.pieces);
    } catch (const std::bad_alloc&) {
        return fail(TQ_ERROR_OUT_OF_MEMORY, std::string(fn) + ": out of memory for " + std::to_string(n_tokens) +
                                                " query tokens over " + std::to_string(n) + " positions");
    }
    return FA_TQ_OK;
}

void attend_prefill(const fa_tq_state* state, const fa_tq_cache* cache, const fa_tq_layer& lay, int pos,
                    int n_tokens, const float* q, int n_q_heads, float scale, const Shaping& shaping, float* out) {
    const int kv_heads = cache->num_heads, d = state->head_dim, group = n_q_heads / kv_heads;
    const std::size_t n = std::size_t(pos) + std::size_t(n_tokens);
    const std::size_t tile_tokens = PrefillJob::tokens_per_tile(group);
    const std::size_t tiles = (std::size_t(n_tokens) + tile_tokens - 1) / tile_tokens;
    const std::size_t tile_tasks = PrefillJob::tasks_per_head(tiles, kv_heads);
    const bool f16 = lay.levers.f16_scales;
    Scratch& s = attend_scratch();
    // The rotated queries by KV head ([kv head][token][group][d]): a tile's rows side by side.
    for (int i = 0; i < n_tokens; ++i)
        for (int h = 0; h < n_q_heads; ++h)
            rotate_queries(state, q + (std::size_t(i) * n_q_heads + h) * d, 1, scale,
                           &s.q_rot[((std::size_t(h / group) * n_tokens + i) * group + h % group) * d]);
    // Linear (or a ring not yet wrapped): slot = position, and every stream holds max_seq_len slots per head.
    const std::size_t stride = std::size_t(cache->max_seq_len);
    const ChunkAttention attend{state, cache, lay, s.pieces, nullptr, nullptr, scale, group, s.pieces.size(),
                                softmax_for(state->kernels->isa), attend_ops_for(state->kernels->isa), false, shaping};
    const float* ks = widen_all(attend, lay.keys, f16, n, s.key_scales.data());
    const float* vs = widen_all(attend, lay.values, f16, n, s.value_scales.data());
    const PrefillJob job{attend, pos, n_tokens, n_q_heads, d, q, s.q_rot.data(), ks, vs, f16 ? n : stride,
                         tile_tokens, tiles, tile_tasks, s.scores.data(), s.q_smooth.data(), s.decoded.data(), s.acc.data(),
                         s.extra.data(), s.partials.data(), out};
    cache->run_tasks(int(std::size_t(kv_heads) * tile_tasks), &PrefillJob::task, const_cast<PrefillJob*>(&job));
}

}  // namespace tq::detail
