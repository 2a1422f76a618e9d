// cut_pieces and chunking: where an attention call's pieces and chunks begin and end.
#include "fa_tq_chunks.hpp"

#include "fa_tq_blocks.hpp"
#include "fa_tq_token.hpp"

#include <algorithm>
#include <climits>

namespace tq::detail {

void cut_pieces(const fa_tq_cache* cache, const fa_tq_layer& lay, long first, long last, std::vector<Piece>& out) {
    out.clear();
    const bool blocks = has_blocks(lay.keys) || has_blocks(lay.values);
    for (long p = first; p <= last;) {
        const long a = p + cache->evicted;
        long end = last + 1;
        const bool sink = is_sink(lay.levers, a);
        if (sink)
            end = std::min(end, lay.levers.sinks - cache->evicted);
        else if (blocks)
            end = std::min(end, block_end(lay.levers, block_of(lay.levers, a)) - cache->evicted);
        if (cache->ring) end = std::min(end, (p / cache->max_seq_len + 1) * long(cache->max_seq_len));
        out.push_back({p, end, std::size_t(cache->slot(int(p))), sink});
        p = end;
    }
}

std::size_t wrap_index(const std::vector<Piece>& pieces) {
    for (std::size_t i = 1; i < pieces.size(); ++i)
        if (pieces[i].slot_begin < pieces[i - 1].slot_begin) return i;
    return pieces.size();
}

Chunking chunking(std::size_t n, bool parallel, int kv_heads, const std::vector<Piece>& pieces) {
    Chunking out{1, n, {0, n}};
    const std::size_t max_chunks = std::min<std::size_t>(Chunking::kMaxChunks, std::size_t(INT_MAX / kv_heads));
    if (!parallel || max_chunks < 2) return out;
    const std::size_t length = std::max<std::size_t>(FA_TQ_PARALLEL_CHUNK, (n + max_chunks - 1) / max_chunks);
    const std::size_t slack = length / 4;  // < length / 2: the cuts stay in order
    const std::size_t wrap = wrap_index(pieces), runs[] = {0, wrap, pieces.size()};
    out.count = (n + length - 1) / length;
    out.longest = 0;
    for (std::size_t c = 1; c < out.count; ++c) {
        const std::size_t target = c * length;
        std::size_t cut = target, best = slack + 1;
        for (int r = 0; r < 2; ++r) {  // each run of increasing slots: the piece around target
            const auto first = pieces.begin() + std::ptrdiff_t(runs[r]);
            const auto last = pieces.begin() + std::ptrdiff_t(runs[r + 1]);
            const auto pc = std::partition_point(first, last, [&](const Piece& p) { return slot_end(p) <= target; });
            if (pc == last || pc->slot_begin > target) continue;
            for (std::size_t b : {pc->slot_begin, slot_end(*pc)}) {
                const std::size_t dist = b > target ? b - target : target - b;
                if (b > 0 && b < n && dist < best) cut = b, best = dist;
            }
        }
        out.bounds[c] = cut;
        out.longest = std::max(out.longest, cut - out.bounds[c - 1]);
    }
    out.bounds[out.count] = n;
    out.longest = std::max(out.longest, n - out.bounds[out.count - 1]);
    return out;
}

}  // namespace tq::detail
