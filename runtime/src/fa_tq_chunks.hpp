// How an attention call cuts the visible positions: into pieces (sinks, one lever
// block each, the ring's wrap) and, for flash-decoding, into chunks of slots.
#pragma once

#include "fa_tq_internal.hpp"

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace tq::detail {

// Positions [begin, end) of one kind: sinks, or one mean block, in consecutive slots.
struct Piece {
    long pos_begin, pos_end;  // cache positions (absolute minus evicted)
    std::size_t slot_begin;
    bool sink;
};

inline std::size_t slot_end(const Piece& p) { return p.slot_begin + std::size_t(p.pos_end - p.pos_begin); }

// Cuts the visible positions [first, last] at sink and block boundaries and at the ring's wrap.
void cut_pieces(const fa_tq_cache* cache, const fa_tq_layer& lay, long first, long last, std::vector<Piece>& out);

// Where cut_pieces' slots start again from 0 (a ring's wrap), or the number of pieces.
std::size_t wrap_index(const std::vector<Piece>& pieces);

// The index ranges [first, last) of the pieces that may meet slots [c0, c1), one per
// run of increasing slots (pieces [0, wrap) and [wrap, size)): a binary search in each,
// so that a chunk costs its own pieces, not all of them.
using PieceRanges = std::array<std::pair<std::size_t, std::size_t>, 2>;
PieceRanges pieces_meeting(const std::vector<Piece>& pieces, std::size_t wrap, std::size_t c0, std::size_t c1);

// How the visible slots [0, n) are cut for flash-decoding: one chunk when the cache
// has no executor (one pass), else chunks of about L = FA_TQ_PARALLEL_CHUNK or more
// slots, at most kMaxChunks per KV head.  Each cut at c L moves to the nearest piece
// boundary within L / 4, so that a chunk holds whole blocks where the blocks allow
// (one sink before blocks of 128 would otherwise cut every block in two: half again
// the kernel calls, each with its own setup); no chunk is longer than 1.5 L.
// Depends on the positions and the pieces, never on the thread count.
struct Chunking {
    static constexpr std::size_t kMaxChunks = 64;  // bounds the partials kept for the merge
    std::size_t count, longest;
    std::size_t wrap;                                // wrap_index(pieces), for pieces_meeting
    std::array<std::size_t, kMaxChunks + 1> bounds;  // chunk c: slots [bounds[c], bounds[c + 1])
};
Chunking chunking(std::size_t n, bool parallel, int kv_heads, const std::vector<Piece>& pieces);

}  // namespace tq::detail
