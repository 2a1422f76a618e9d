// The tq memory's batches: whether a ubatch's tokens fit the sequences' caches, and
// the runs of consecutive positions per sequence that the op then attends.
#include "llama-tq-memory.h"

#include "llama-batch.h"
#include "llama-impl.h"

#include <algorithm>
#include <functional>

bool llama_tq_memory::fits(const std::vector<llama_ubatch> & ubatches, std::string & why) const {
    std::vector<int64_t> count(n_seq_max);  // cache entries per sequence once the ubatches are in
    std::vector<llama_pos> last(n_seq_max);
    std::vector<bool> checked(n_seq_max);  // ALiBi: the sequence's positions follow on one by one
    for (uint32_t s = 0; s < n_seq_max; ++s) {
        count[s] = held(seqs[s]);  // (a pending hole is compacted first)
        last[s] = count[s] > 0 ? seqs[s].positions.back() : -1;
    }
    for (const auto & ub : ubatches) {
        for (uint32_t i = 0; i < ub.n_tokens; ++i) {
            for (int32_t k = 0; k < ub.n_seq_id[i]; ++k) {  // a token of several sequences goes into each
                const llama_seq_id s = ub.seq_id[i][k];
                if (s < 0 || uint32_t(s) >= n_seq_max) {
                    why = "sequence id " + std::to_string(s) + " is beyond the context's " + std::to_string(n_seq_max);
                    return false;
                }
                // ALiBi's bias is by the distance of cache entries: llama.cpp's distance of
                // positions where these follow on one by one (a shift or self-extend that
                // leaves gaps or ties breaks that).
                if (!alibi_slopes.empty() && !checked[s]) {
                    checked[s] = true;
                    const auto & p = seqs[s].positions;
                    if (!p.empty() && (p.back() - p.front() != llama_pos(p.size()) - 1 ||
                                       std::adjacent_find(p.begin(), p.end(), std::greater_equal<llama_pos>()) != p.end())) {
                        why = "ALiBi over positions that do not follow on one by one (after a shift or self-extend) "
                              "is not supported";
                        return false;
                    }
                }
                if (!alibi_slopes.empty() && count[s] > 0 && ub.pos[i] > last[s] + 1) {
                    why = "ALiBi over positions that do not follow on one by one (a gap before position " +
                          std::to_string(ub.pos[i]) + ") is not supported";
                    return false;
                }
                if (n_pos_per_embd > 1 && count[s] > 0 && ub.pos[i] == last[s]) {
                    why = "tokens that share a position (an image's, with M-RoPE's several axes) are not supported";
                    return false;
                }
                if (count[s] == 0 || ub.pos[i] > last[s]) {
                    ++count[s];
                    last[s] = ub.pos[i];
                }
                if (count[s] > int64_t(n_ctx_seq)) {
                    why = "sequence " + std::to_string(s) + " would hold more than the context's " +
                          std::to_string(n_ctx_seq) + " positions per sequence";
                    return false;
                }
            }
        }
    }
    int64_t total = 0;  // what the sequences would hold together
    for (uint32_t s = 0; s < n_seq_max; ++s) {
        total += count[s];
    }
    if (pool > 0 && total > int64_t(pool)) {
        why = "the sequences would hold " + std::to_string(total) + " positions, beyond the unified context of " +
              std::to_string(pool);
        return false;
    }
    return true;
}

llama_memory_context_ptr llama_tq_memory::init_batch(llama_batch_allocr & balloc, uint32_t n_ubatch, bool embd_all) {
    GGML_UNUSED(embd_all);
    balloc.split_reset();
    std::vector<llama_ubatch> ubatches;
    while (true) {
        llama_ubatch ub = balloc.split_simple(n_ubatch);
        if (ub.n_tokens == 0) {
            break;
        }
        ubatches.push_back(std::move(ub));
    }
    std::string why;
    if (balloc.get_n_used() < balloc.get_n_tokens() || !fits(ubatches, why)) {
        if (!why.empty()) {
            LLAMA_LOG_ERROR("%s: tq KV cache: %s\n", __func__, why.c_str());
        }
        return std::make_unique<llama_tq_memory_context>(LLAMA_MEMORY_STATUS_FAILED_PREPARE);
    }
    return std::make_unique<llama_tq_memory_context>(this, std::move(ubatches));
}

llama_memory_context_ptr llama_tq_memory::init_full() {
    return std::make_unique<llama_tq_memory_context>(this);
}

llama_memory_context_ptr llama_tq_memory::init_update(llama_context * lctx, bool optimize) {
    GGML_UNUSED(lctx);
    GGML_UNUSED(optimize);
    return std::make_unique<llama_tq_memory_context>(LLAMA_MEMORY_STATUS_NO_UPDATE);
}

bool llama_tq_memory_context::apply() {
    return mem == nullptr || i_cur >= ubatches.size() || mem->apply_ubatch(ubatches[i_cur]);
}

bool llama_tq_memory::apply_ubatch(const llama_ubatch & ub) {
    runs.clear();
    team.next_compute();
    {
        std::lock_guard<std::mutex> lock(error_mutex);
        error.clear();  // a compute aborted before its status was taken
    }
    for (uint32_t i = 0; i < ub.n_tokens; ++i) {
        for (int32_t k = 0; k < ub.n_seq_id[i]; ++k) {
            // The token's keys and values go into each of its sequences; its output is its
            // first sequence's (llama.cpp's mask reads seq_id[i][0]).
            const llama_seq_id s = ub.seq_id[i][k];
            const llama_pos p = ub.pos[i];
            sequence & seq = seqs[s];
            if (!settle(seq)) {
                LLAMA_LOG_ERROR("%s: tq KV cache: sequence %d: %s\n", __func__, s, fa_tq_last_error());
                return false;
            }
            // llama.cpp's batches continue a sequence at its last position + 1: appended.
            const int index = seq.positions.empty() || p > seq.positions.back() ? held(seq) : index_of(seq, p);
            if (index == held(seq)) {
                seq.positions.push_back(p);
            }
            auto it = std::find_if(runs.begin(), runs.end(), [&](const run & r) {
                return r.seq == s && r.pos + llama_pos(r.tokens.size()) == p;
            });
            if (it == runs.end()) {
                runs.push_back({s, p, index, {}, {}});
                it = runs.end() - 1;
            }
            it->tokens.push_back(int32_t(i));
            it->owns.push_back(k == 0);
            if (!fit_capacity(seq, index + 1)) {
                LLAMA_LOG_ERROR("%s: tq KV cache: sequence %d cannot grow to position %d: %s\n", __func__, s, p,
                                fa_tq_last_error());
                seq.positions.resize(size_t(std::min(index, held(seq))));
                return false;
            }
        }
    }
    return true;
}
