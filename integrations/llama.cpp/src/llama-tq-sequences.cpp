// The sequences of the tq memory: what each llama_memory_i sequence operation does
// to the caches (docs/llama.cpp.md, "What the memory does"), and the pool's room.
#include "llama-tq-memory.h"

#include "llama-impl.h"
#include "llama-tq-rope.h"

#include <algorithm>
#include <cmath>
#include <limits>

std::vector<fa_tq_cache *> llama_tq_memory::linear_caches(sequence & s) const {
    std::vector<fa_tq_cache *> out;
    if (s.full) {
        out.push_back(s.full.get());
    }
    if (s.swa && !has_ring) {
        out.push_back(s.swa.get());
    }
    return out;
}

bool llama_tq_memory::fit_capacity(sequence & s, int length) {
    if (pool == 0 || probe) {
        return true;  // each sequence has its whole context
    }
    auto pages = [](int64_t n) { return int((n + k_page - 1) / k_page * k_page); };
    int want = s.capacity;
    if (length > s.capacity) {
        // Half again as much (few copies as a sequence grows), within what the other
        // sequences leave of the pool: the pool's positions are never all given twice.
        int64_t others = 0;
        for (const auto & o : seqs) {
            others += &o == &s ? 0 : o.capacity;
        }
        const int room = int(std::max<int64_t>(int64_t(pool) - others, 0));
        want = std::max(pages(length), std::min(pages(int64_t(s.capacity) * 3 / 2), pages(room)));
    } else if (length < s.capacity / 4 && s.capacity > int(k_page)) {
        want = std::max(int(k_page), pages(2 * int64_t(length)));  // give most of it back
    }
    want = std::min(want, int(n_ctx_seq));
    if (want == s.capacity) {
        return true;
    }
    for (fa_tq_cache * c : linear_caches(s)) {
        if (fa_tq_cache_resize(c, want) != FA_TQ_OK) {
            return false;  // (a cache that did resize holds its positions either way)
        }
    }
    s.capacity = want;
    return true;
}

bool llama_tq_memory::truncate(sequence & s, int length) {
    if (s.full && fa_tq_cache_truncate(s.full.get(), length) != FA_TQ_OK) {
        return false;
    }
    if (s.swa && !has_ring && fa_tq_cache_truncate(s.swa.get(), length) != FA_TQ_OK) {
        return false;
    }
    if (s.swa && has_ring) {
        if (length <= s.ring_offset) {  // nothing of the ring is left: it starts again at length
            fa_tq_cache_clear(s.swa.get());
            s.ring_offset = length;
        } else if (fa_tq_cache_truncate(s.swa.get(), length - s.ring_offset) != FA_TQ_OK) {
            return false;
        }
    }
    s.positions.resize(size_t(length));
    if (length == 0) {
        s.ring_offset = 0;
    }
    fit_capacity(s, length);  // shrinking: a failure leaves the larger room, nothing lost
    return true;
}

void llama_tq_memory::reset(sequence & s) {
    for (fa_tq_cache * c : {s.full.get(), s.swa.get()}) {
        if (c != nullptr) {
            fa_tq_cache_clear(c);
        }
    }
    s.positions.clear();
    s.ring_offset = s.hole_at = s.hole_size = 0;
    fit_capacity(s, 0);
}

void llama_tq_memory::clear(bool data) {
    GGML_UNUSED(data);
    for (auto & s : seqs) {
        reset(s);
    }
}

bool llama_tq_memory::rewrite(sequence & s, int from, int a, const std::vector<llama_pos> & deltas) {
    const int b = a + int(deltas.size());
    // Physical entries (what the caches hold, the hole included) and logical ones (what
    // positions lists): logical(p) is where physical entry p goes once the hole is out.
    const int n_phys = held(s) + s.hole_size, n_logical = held(s);
    const int start = s.hole_size > 0 ? std::min(from, s.hole_at) : from;
    const size_t row = size_t(n_head_kv) * size_t(n_embd_head);
    auto in_hole = [&](int p) { return p >= s.hole_at && p < s.hole_at + s.hole_size; };
    auto logical = [&](int p) { return p < s.hole_at ? p : p - s.hole_size; };
    constexpr int k_chunk = 256;  // entries decoded at a time, per layer
    std::vector<float> all(size_t(k_chunk) * row), keys(all.size()), values(all.size());
    // Cache c (cache index = its index + offset; it holds from physical entry `oldest`):
    // its entries from `start` on, less the hole, decoded a chunk at a time per layer and
    // written again in place, each at its logical index, or lower: a write never reaches
    // an entry not yet decoded.  The keys of logical [a, b) turn by their deltas.  Returns the
    // cache's new offset (a ring keeps its first entries' indices), or k_failed.
    constexpr int k_failed = std::numeric_limits<int>::min();
    auto move = [&](fa_tq_cache * c, bool swa, int offset, int oldest) -> int {
        const int first = std::max(start, oldest);
        const int new_offset = offset - std::clamp(oldest - s.hole_at, 0, s.hole_size);
        for (int il = 0, l = 0; il < n_layer; ++il) {
            if (layer_swa[il] != swa) {
                continue;
            }
            for (int p0 = first; p0 < n_phys; p0 += k_chunk) {
                const int p1 = std::min(p0 + k_chunk, n_phys);
                int kept = 0, turn0 = -1, turn1 = -1, turn_from = 0;  // rows kept; of them, those that turn
                for (bool key : {true, false}) {
                    if (fa_tq_dequantize(state.get(), c, l, p0 - offset, p1 - p0, key, all.data()) == nullptr) {
                        return k_failed;
                    }
                    kept = 0;
                    for (int p = p0; p < p1; ++p) {
                        if (in_hole(p)) {
                            continue;
                        }
                        if (logical(p) >= a && logical(p) < b) {
                            turn_from = turn0 < 0 ? logical(p) - a : turn_from;
                            turn0 = turn0 < 0 ? kept : turn0;
                            turn1 = kept + 1;
                        }
                        std::copy_n(&all[size_t(p - p0) * row], row, &(key ? keys : values)[size_t(kept++) * row]);
                    }
                }
                if (turn0 >= 0 && !llama_tq_rope_shift(model, cparams, il, &keys[size_t(turn0) * row], turn1 - turn0,
                                                       n_head_kv, n_embd_head, &deltas[size_t(turn_from)],
                                                       int(cparams.n_threads))) {
                    return k_failed;
                }
                int j = 0;
                for (int p = p0; p < p1; ++p) {
                    if (in_hole(p)) {
                        continue;
                    }
                    const int at = logical(p) - new_offset;
                    if (fa_tq_quantize(state.get(), c, l, at, &keys[size_t(j) * row], true) != FA_TQ_OK ||
                        fa_tq_quantize(state.get(), c, l, at, &values[size_t(j) * row], false) != FA_TQ_OK) {
                        return k_failed;
                    }
                    ++j;
                }
            }
            ++l;
        }
        return fa_tq_cache_truncate(c, n_logical - new_offset) == FA_TQ_OK ? new_offset : k_failed;
    };
    bool ok = true;
    for (fa_tq_cache * c : linear_caches(s)) {
        ok = ok && move(c, c == s.swa.get() && swa_apart, 0, 0) == 0;
    }
    if (ok && s.swa && has_ring) {
        const int offset = move(s.swa.get(), true, s.ring_offset, fa_tq_cache_oldest(s.swa.get()) + s.ring_offset);
        ok = offset != k_failed;
        s.ring_offset = offset;
    }
    s.hole_at = s.hole_size = 0;
    if (!ok) {
        LLAMA_LOG_ERROR("%s: tq KV cache: re-encoding a sequence failed (%s); the sequence is emptied\n", __func__,
                        fa_tq_last_error());
        reset(s);
    }
    return ok;
}

bool llama_tq_memory::seq_rm(llama_seq_id seq_id, llama_pos p0, llama_pos p1) {
    if (seq_id >= llama_seq_id(n_seq_max)) {
        return false;
    }
    p0 = std::max(p0, 0);
    if (p1 < 0) {
        p1 = std::numeric_limits<llama_pos>::max();
    }
    auto remove = [&](llama_seq_id id) {
        sequence & s = seqs[id];
        if (!settle(s)) {
            return false;
        }
        const int i0 = index_of(s, p0), i1 = index_of(s, p1), n = held(s);
        if (i0 >= i1) {
            return true;  // nothing held in [p0, p1)
        }
        if (i0 == 0 && i1 == n) {
            reset(s);
            return true;
        }
        if (i1 == n) {
            // A tail.  A ring gives back the positions the removed ones overwrote only
            // within its slack; past it, seq_pos_min rises (llama.cpp's SWA cache does
            // the same), and the callers that need more (llama-server) reprocess.
            return truncate(s, i0);
        }
        s.positions.erase(s.positions.begin() + i0, s.positions.begin() + i1);
        if (i0 == 0 && !has_ring) {  // a head of linear caches: moved down in place
            for (fa_tq_cache * c : linear_caches(s)) {
                if (fa_tq_cache_evict(c, i1) != FA_TQ_OK) {
                    reset(s);
                    return false;
                }
            }
            return true;
        }
        // The middle (or a head where a ring would still see it): the caches lose the
        // entries when the shift that usually follows re-encodes what comes after them.
        s.hole_at = i0;
        s.hole_size = i1 - i0;
        return true;
    };
    if (seq_id >= 0) {
        return remove(seq_id);
    }
    bool ok = true;
    for (uint32_t s = 0; s < n_seq_max; ++s) {
        ok = remove(llama_seq_id(s)) && ok;
    }
    return ok;
}

void llama_tq_memory::seq_cp(llama_seq_id src, llama_seq_id dst, llama_pos p0, llama_pos p1) {
    if (src == dst || src < 0 || dst < 0 || uint32_t(src) >= n_seq_max || uint32_t(dst) >= n_seq_max) {
        return;
    }
    sequence &from = seqs[src], &to = seqs[dst];
    if (from.positions.empty() || (p1 >= 0 && p1 <= from.positions.front()) || !settle(from)) {
        return;  // nothing of src in the range
    }
    if (p0 > from.positions.front()) {
        append_range(from, to, index_of(from, p0), p1 < 0 ? held(from) : index_of(from, p1), dst);
        return;
    }
    // The whole sequence (a prefix: then its tail removed), into room of the same size.
    if (pool > 0) {
        for (fa_tq_cache * c : linear_caches(to)) {
            if (fa_tq_cache_resize(c, from.capacity) != FA_TQ_OK) {
                LLAMA_LOG_ERROR("%s: tq KV cache: %s; sequence %d left as it was\n", __func__, fa_tq_last_error(), dst);
                return;
            }
        }
        to.capacity = from.capacity;
    }
    for (auto [d, s] : {std::pair{to.full.get(), from.full.get()}, std::pair{to.swa.get(), from.swa.get()}}) {
        if (d != nullptr && fa_tq_cache_copy(d, s) != FA_TQ_OK) {
            LLAMA_LOG_ERROR("%s: tq KV cache: %s\n", __func__, fa_tq_last_error());
            reset(to);
            return;
        }
    }
    to.positions = from.positions;
    to.ring_offset = from.ring_offset;
    to.hole_at = to.hole_size = 0;
    if (p1 >= 0 && p1 <= from.positions.back()) {
        truncate(to, index_of(to, p1));
    } else {
        fit_capacity(to, held(to));
    }
}

void llama_tq_memory::append_range(sequence & from, sequence & to, int i0, int i1, llama_seq_id dst) {
    if (i0 >= i1) {
        return;
    }
    auto refuse_copy = [&](const std::string & why) {
        LLAMA_LOG_ERROR("%s: tq KV cache: copying positions %d..%d to sequence %d: %s; sequence %d left as it was\n",
                        __func__, from.positions[size_t(i0)], from.positions[size_t(i1 - 1)], dst, why.c_str(), dst);
    };
    if (!settle(to)) {
        return;
    }
    // These caches hold a sequence in order of position: the range goes after what dst holds.
    if (!to.positions.empty() && to.positions.back() >= from.positions[size_t(i0)]) {
        refuse_copy("sequence " + std::to_string(dst) + " holds position " + std::to_string(to.positions.back()) +
                    ", and a copy must come after it");
        return;
    }
    // A ring holds its last ring_cap entries: those of the range that dst's ring will keep
    // must still be in src's, and a dst that already holds some cannot skip the rest.
    int skip = 0;  // the range's first entries that only the linear caches take
    if (has_ring) {
        const int oldest = fa_tq_cache_oldest(from.swa.get()) + from.ring_offset;
        skip = std::max(0, std::max(i0, i1 - ring_cap) - i0);
        if (i0 + skip < oldest || (skip > 0 && held(to) > 0)) {
            refuse_copy("sequence " + std::to_string(int(&from - seqs.data())) + "'s sliding-window ring no longer "
                        "holds them");
            return;
        }
    }
    const int n = i1 - i0, at = held(to);
    if (!fit_capacity(to, at + n)) {
        refuse_copy(fa_tq_last_error());
        return;
    }
    if (has_ring && at == 0) {
        to.ring_offset = skip;  // dst's ring starts at the range's first entry it keeps
    }
    // Each cache's layers: the range decoded from src, encoded at dst's end, a chunk at a time.
    const size_t row = size_t(n_head_kv) * size_t(n_embd_head);
    constexpr int k_chunk = 256;
    std::vector<float> rows(size_t(k_chunk) * row);
    auto copy = [&](fa_tq_cache * d, const fa_tq_cache * s, int s_offset, int d_offset, int first) {
        const int layers = int(std::count(layer_swa.begin(), layer_swa.end(), d == to.swa.get() && swa_apart));
        for (int l = 0; l < layers; ++l) {
            for (int c0 = i0 + first; c0 < i1; c0 += k_chunk) {
                const int count = std::min(k_chunk, i1 - c0);
                for (bool key : {true, false}) {
                    if (fa_tq_dequantize(state.get(), s, l, c0 - s_offset, count, key, rows.data()) == nullptr) {
                        return false;
                    }
                    for (int j = 0; j < count; ++j) {
                        if (fa_tq_quantize(state.get(), d, l, at + (c0 - i0) + j - d_offset, &rows[size_t(j) * row],
                                           key) != FA_TQ_OK) {
                            return false;
                        }
                    }
                }
            }
        }
        return true;
    };
    bool ok = true;
    if (to.full) {
        ok = copy(to.full.get(), from.full.get(), 0, 0, 0);
    }
    if (ok && to.swa) {
        ok = has_ring ? copy(to.swa.get(), from.swa.get(), from.ring_offset, to.ring_offset, skip)
                      : copy(to.swa.get(), from.swa.get(), 0, 0, 0);
    }
    if (!ok) {
        LLAMA_LOG_ERROR("%s: tq KV cache: copying to sequence %d failed (%s); the sequence is emptied\n", __func__,
                        dst, fa_tq_last_error());
        reset(to);
        return;
    }
    to.positions.insert(to.positions.end(), from.positions.begin() + i0, from.positions.begin() + i1);
}

void llama_tq_memory::seq_keep(llama_seq_id seq_id) {
    for (uint32_t s = 0; s < n_seq_max; ++s) {
        if (llama_seq_id(s) != seq_id) {
            reset(seqs[s]);
        }
    }
}

template <typename F>
void llama_tq_memory::move_positions(llama_seq_id seq_id, llama_pos p0, llama_pos p1, F new_pos, int turn_sign,
                                     const char * what) {
    if (!get_can_shift()) {  // llama.cpp's own cache aborts here; this one refuses
        LLAMA_LOG_ERROR("%s: tq KV cache: %s positions of a model with M-RoPE (several axes per position) is not "
                        "supported, as with llama.cpp's caches; the sequences left as they were\n", __func__, what);
        return;
    }
    p0 = std::max(p0, 0);
    if (p1 < 0) {
        p1 = std::numeric_limits<llama_pos>::max();
    }
    for (uint32_t id = 0; id < n_seq_max; ++id) {
        if (seq_id >= 0 && llama_seq_id(id) != seq_id) {
            continue;
        }
        sequence & s = seqs[id];
        int a = index_of(s, p0);
        const int b = index_of(s, p1), n = held(s);
        if (a >= b) {
            continue;
        }
        // Positions that would fall below 0 are removed, as llama.cpp's cells are.
        int below = a;
        while (below < b && new_pos(s.positions[size_t(below)]) < 0) {
            ++below;
        }
        if (below > a) {
            if (seq_rm(llama_seq_id(id), s.positions[size_t(a)], s.positions[size_t(below - 1)] + 1)) {
                move_positions(llama_seq_id(id), p0, p1, new_pos, turn_sign, what);  // the rest, at its new indices
            }
            continue;
        }
        // The positions stay in order, ties allowed (llama.cpp's cells take any order;
        // these caches are ordered by position): else refused.
        std::vector<llama_pos> deltas(size_t(b - a));
        for (int i = a; i < b; ++i) {
            deltas[size_t(i - a)] = new_pos(s.positions[size_t(i)]) - s.positions[size_t(i)];
        }
        if ((a > 0 && s.positions[size_t(a - 1)] > s.positions[size_t(a)] + deltas.front()) ||
            (b < n && s.positions[size_t(b - 1)] + deltas.back() > s.positions[size_t(b)])) {
            LLAMA_LOG_ERROR("%s: tq KV cache: %s positions %d..%d of sequence %d would reorder them; not supported, "
                            "the sequence left as it was\n", __func__, what, s.positions[size_t(a)],
                            s.positions[size_t(b - 1)], int(id));
            continue;
        }
        if (std::all_of(deltas.begin(), deltas.end(), [](llama_pos d) { return d == 0; })) {
            continue;
        }
        // Decode, RoPE by each change (times turn_sign), encode again (with the hole a
        // removal left, in one pass).
        std::vector<llama_pos> turns(deltas);
        for (llama_pos & t : turns) {
            t *= turn_sign;
        }
        if (rewrite(s, a, a, turns)) {
            for (int i = a; i < b; ++i) {
                s.positions[size_t(i)] += deltas[size_t(i - a)];
            }
        }
    }
}

void llama_tq_memory::seq_add(llama_seq_id seq_id, llama_pos p0, llama_pos p1, llama_pos shift) {
    if (shift != 0) {
        move_positions(seq_id, p0, p1, [shift](llama_pos p) { return p + shift; }, 1, "shifting");
    }
}

void llama_tq_memory::seq_div(llama_seq_id seq_id, llama_pos p0, llama_pos p1, int d) {
    if (d > 1) {
        // As llama.cpp's cells: position p becomes p / d, and the key turns by the shift
        // llama_kv_cells::pos_div records, p - p / d: the opposite of the position's
        // change (seq_add's keys turn by +shift).  A tq cache keeps what f16's does
        // (docs/llama.cpp.md, "Self-extend").
        move_positions(seq_id, p0, p1, [d](llama_pos p) { return p / d; }, -1, "dividing");
    }
}

llama_pos llama_tq_memory::seq_pos_min(llama_seq_id seq_id) const {
    if (seq_id < 0 || uint32_t(seq_id) >= n_seq_max || seqs[seq_id].positions.empty()) {
        return -1;
    }
    const sequence & s = seqs[seq_id];
    if (!has_ring) {
        return s.positions.front();
    }
    // What every layer still holds: the ring's oldest entry (window and slack, less what
    // a removal past the slack lost), as a position.
    int p = fa_tq_cache_oldest(s.swa.get()) + s.ring_offset;
    if (s.hole_size > 0 && p >= s.hole_at) {
        p = std::max(s.hole_at, p - s.hole_size);
    }
    return s.positions[size_t(std::min(p, held(s) - 1))];
}

llama_pos llama_tq_memory::seq_pos_max(llama_seq_id seq_id) const {
    if (seq_id < 0 || uint32_t(seq_id) >= n_seq_max || seqs[seq_id].positions.empty()) {
        return -1;
    }
    return seqs[seq_id].positions.back();
}

std::map<ggml_backend_buffer_type_t, size_t> llama_tq_memory::memory_breakdown() const {
    // Each cache's fixed part, and its bytes per position times the positions it may
    // hold: a ring's size, a sequence's context, or in a pool the pool's positions once.
    // A pool's caches grow: their bytes per position are all in (with the levers' block
    // records, amortized), and their fixed parts are what they hold beyond that rate.
    // (probe: caches of one position, of the first sequence only.)
    double bytes = 0, linear_token = 0, ring_token = 0;
    for (const auto & s : seqs) {
        for (const fa_tq_cache * c : {s.full.get(), s.swa.get()}) {
            size_t per_token = 0, total = 0;
            if (c == nullptr || fa_tq_cache_bytes(c, &per_token, &total) != FA_TQ_OK) {
                continue;
            }
            const bool ring = has_ring && c == s.swa.get();
            const double rate = pool > 0 && !ring ? fa_tq_cache_bytes_per_token_all_in(c) : double(per_token);
            const double cap = probe ? 1 : ring ? ring_cap : s.capacity;
            bytes += std::max(double(total) - rate * cap, 0.0) * (probe ? n_seq_max : 1);
            if (&s == &seqs[0]) {
                (ring ? ring_token : linear_token) += rate;
            }
        }
    }
    bytes += linear_token * double(pool > 0 ? pool : n_ctx_seq * n_seq_max) + ring_token * ring_cap * n_seq_max;
    return {{ggml_backend_cpu_buffer_type(), size_t(std::ceil(bytes))}};
}
