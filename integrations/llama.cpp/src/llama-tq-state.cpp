// The tq memory's state (llama.cpp's session and slot files, the server's prompt
// cache and checkpoints): written per sequence, read back all or nothing.
#include "llama-tq-memory.h"

#include "llama-io.h"

#include <algorithm>

namespace {

// The state: a header (with whether it is the sliding-window part alone), then per
// sequence its id, entry count, ring offset and each entry's position, and each of
// its caches (the sliding-window one alone in a partial state) as
// fa_tq_cache_serialize writes it (machine-local, as llama.cpp's own state is).
constexpr uint32_t k_state_magic = 0x564b5154;  // "TQKV"
constexpr uint32_t k_state_version = 3;
// Bytes a serialized cache may take beyond its allocation (headers per layer and stream).
constexpr uint64_t k_state_headers = 4096;

}  // namespace

void llama_tq_memory::state_write(llama_io_write_i & io, llama_seq_id seq_id, llama_state_seq_flags flags) const {
    // llama.cpp's server keeps checkpoints of the sliding-window layers alone (PARTIAL_ONLY).
    const bool partial = (flags & LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY) != 0 && swa_apart;
    std::vector<uint32_t> chosen;
    for (uint32_t s = 0; s < n_seq_max; ++s) {
        if ((seq_id < 0 || llama_seq_id(s) == seq_id) && !seqs[s].positions.empty()) {
            chosen.push_back(s);
        }
    }
    const uint32_t header[4] = {k_state_magic, k_state_version, uint32_t(chosen.size()), uint32_t(partial)};
    io.write(header, sizeof(header));
    std::vector<uint8_t> bytes;
    for (uint32_t s : chosen) {
        // A removal's hole goes first (the caches then hold what positions lists); the
        // memory's contents stay what they were.
        sequence & seq = const_cast<llama_tq_memory *>(this)->seqs[s];
        if (!const_cast<llama_tq_memory *>(this)->settle(seq)) {
            refuse(std::string("sequence ") + std::to_string(s) + ": " + fa_tq_last_error());
        }
        const int32_t ids[3] = {int32_t(s), int32_t(held(seq)), seq.ring_offset};
        io.write(ids, sizeof(ids));
        io.write(seq.positions.data(), seq.positions.size() * sizeof(llama_pos));
        for (const fa_tq_cache * c : {seq.full.get(), seq.swa.get()}) {
            if (partial && c != seq.swa.get()) {
                continue;
            }
            uint64_t size = 0;
            if (c != nullptr) {
                size_t n = 0;
                if (fa_tq_cache_serialize(c, nullptr, 0, &n) != FA_TQ_OK) {
                    refuse(fa_tq_last_error());
                }
                bytes.resize(n);
                if (fa_tq_cache_serialize(c, bytes.data(), n, &n) != FA_TQ_OK) {
                    refuse(fa_tq_last_error());
                }
                size = n;
            }
            io.write(&size, sizeof(size));
            io.write(bytes.data(), size_t(size));
        }
    }
}

void llama_tq_memory::state_read(llama_io_read_i & io, llama_seq_id seq_id, llama_state_seq_flags flags) {
    uint32_t header[4] = {0, 0, 0, 0};
    io.read(header, sizeof(header));
    if (header[0] != k_state_magic || header[1] != k_state_version) {
        refuse("the state was not written by this version of the tq KV cache");
    }
    if (seq_id >= 0 ? header[2] > 1 : header[2] > n_seq_max) {
        refuse("the state holds " + std::to_string(header[2]) + " sequences, more than this context takes");
    }
    const bool partial = (flags & LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY) != 0 && swa_apart;
    if (header[3] != uint32_t(partial)) {
        refuse(std::string("the state is ") + (header[3] ? "" : "not ") +
               "the sliding-window part alone, and this read asks for " + (partial ? "that" : "the whole"));
    }
    if (partial) {  // into the sequence as it is: a failure leaves it so
        read_sequences(io, seq_id, header[2], true);
        return;
    }
    if (seq_id < 0) {
        clear(true);
    } else {
        seq_rm(seq_id, -1, -1);
    }
    try {
        read_sequences(io, seq_id, header[2], false);
    } catch (...) {  // no sequence left half-restored
        if (seq_id < 0) {
            clear(true);
        } else {
            seq_rm(seq_id, -1, -1);
        }
        throw;
    }
}

void llama_tq_memory::read_cache(llama_io_read_i & io, fa_tq_cache * c, std::vector<uint8_t> & bytes) {
    uint64_t size = 0;
    io.read(&size, sizeof(size));
    if ((c == nullptr) != (size == 0)) {
        refuse("the state's caches do not match this context's layers");
    }
    if (c == nullptr) {
        return;
    }
    // A size beyond what the cache can hold is refused before anything is allocated for it.
    size_t per_token = 0, total = 0;
    fa_tq_cache_bytes(c, &per_token, &total);
    if (size > uint64_t(total) + k_state_headers) {
        refuse("the state's cache of " + std::to_string(size) + " bytes is larger than this context's caches hold (" +
               std::to_string(total) + ")");
    }
    bytes.resize(size_t(size));
    io.read(bytes.data(), bytes.size());
    if (fa_tq_cache_deserialize(c, bytes.data(), bytes.size()) != FA_TQ_OK) {
        refuse(fa_tq_last_error());
    }
}

void llama_tq_memory::read_sequences(llama_io_read_i & io, llama_seq_id seq_id, uint32_t count, bool partial) {
    std::vector<uint8_t> bytes;
    std::vector<llama_pos> positions;
    // In a pool, room for the longest sequence a state may hold, before reading into it.
    auto make_room = [&](fa_tq_cache * c) {
        if (pool > 0 && c != nullptr && fa_tq_cache_resize(c, int(n_ctx_seq)) != FA_TQ_OK) {
            refuse(fa_tq_last_error());
        }
    };
    // What a cache holds after reading: every entry (a ring: from its offset on).
    auto check_length = [&](const fa_tq_cache * c, int want) {
        if (c != nullptr && fa_tq_cache_seq_len(c) != want) {
            refuse("the state's positions do not match its caches");
        }
    };
    for (uint32_t i = 0; i < count; ++i) {
        int32_t ids[3] = {0, 0, 0};
        io.read(ids, sizeof(ids));
        const llama_seq_id dst = seq_id >= 0 ? seq_id : ids[0];
        const int n = ids[1], ring_offset = ids[2];
        if (dst < 0 || uint32_t(dst) >= n_seq_max || n <= 0 || n > int(n_ctx_seq) || ring_offset > n ||
            ring_offset < -int(n_ctx_seq) || (!has_ring && ring_offset != 0)) {
            refuse("the state's sequence " + std::to_string(ids[0]) + " does not fit this context");
        }
        positions.resize(size_t(n));
        io.read(positions.data(), positions.size() * sizeof(llama_pos));
        for (int j = 0; j < n; ++j) {
            if (positions[size_t(j)] < 0 || (j > 0 && positions[size_t(j)] <= positions[size_t(j - 1)])) {
                refuse("the state's positions are not increasing");
            }
        }
        sequence & s = seqs[dst];
        if (partial) {
            // A checkpoint of the sliding-window layers: the rest of the sequence stays, and
            // every cache then ends where the checkpoint does.
            if (!settle(s) || n > held(s) || !std::equal(positions.begin(), positions.end(), s.positions.begin())) {
                refuse("the sliding-window state of sequence " + std::to_string(dst) + " (" + std::to_string(n) +
                       " positions) is not a part of what it holds");
            }
            const bool linear = !has_ring;
            try {
                if (linear) {
                    make_room(s.swa.get());
                }
                read_cache(io, s.swa.get(), bytes);
                check_length(s.swa.get(), n - ring_offset);
            } catch (...) {
                if (linear && pool > 0) {
                    fa_tq_cache_resize(s.swa.get(), s.capacity);  // back to the sequence's room (it held no more)
                }
                throw;
            }
            s.ring_offset = ring_offset;
            truncate(s, n);
            if (linear && pool > 0) {
                fa_tq_cache_resize(s.swa.get(), s.capacity);
            }
            continue;
        }
        for (fa_tq_cache * c : linear_caches(s)) {
            make_room(c);
        }
        if (pool > 0) {
            s.capacity = int(n_ctx_seq);
        }
        for (fa_tq_cache * c : {s.full.get(), s.swa.get()}) {
            read_cache(io, c, bytes);
        }
        s.positions = positions;
        s.ring_offset = ring_offset;
        s.hole_at = s.hole_size = 0;
        check_length(s.full.get(), n);
        check_length(s.swa.get(), has_ring ? n - ring_offset : n);
        fit_capacity(s, n);
    }
}

