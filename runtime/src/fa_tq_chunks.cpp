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

PieceRanges pieces_meeting(const std::vector<Piece>& pieces, std::size_t wrap, std::size_t c0, std::size_t c1) {
    PieceRanges out{};
    const std::size_t runs[] = {0, wrap, pieces.size()};
    for (int r = 0; r < 2; ++r) {
        const auto first = pieces.begin() + std::ptrdiff_t(runs[r]), last = pieces.begin() + std::ptrdiff_t(runs[r + 1]);
        const auto b = std::partition_point(first, last, [&](const Piece& pc) { return slot_end(pc) <= c0; });
        const auto e = std::partition_point(b, last, [&](const Piece& pc) { return pc.slot_begin < c1; });
        out[r] = {std::size_t(b - pieces.begin()), std::size_t(e - pieces.begin())};
    }
    return out;
}

Chunking chunking(std::size_t n, bool parallel, int kv_heads, const std::vector<Piece>& pieces) {
    Chunking out{1, n, wrap_index(pieces), {0, n}};
    const std::size_t max_chunks = std::min<std::size_t>(Chunking::kMaxChunks, std::size_t(INT_MAX / kv_heads));
    if (!parallel || max_chunks < 2) return out;
    const std::size_t length = std::max<std::size_t>(FA_TQ_PARALLEL_CHUNK, (n + max_chunks - 1) / max_chunks);
    const std::size_t slack = length / 4;  // < length / 2: the cuts stay in order
    out.count = (n + length - 1) / length;
    out.longest = 0;
    for (std::size_t c = 1; c < out.count; ++c) {
        const std::size_t target = c * length;
        std::size_t cut = target, best = slack + 1;
        for (auto [first, last] : pieces_meeting(pieces, out.wrap, target, target + 1)) {  // per run, the piece around target
            if (first == last) continue;
            for (std::size_t edge : {pieces[first].slot_begin, slot_end(pieces[first])}) {
                const std::size_t dist = edge > target ? edge - target : target - edge;
                if (edge > 0 && edge < n && dist < best) cut = edge, best = dist;
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
