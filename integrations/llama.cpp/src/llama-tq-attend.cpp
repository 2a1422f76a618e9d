// The tq memory's attention op: each layer's runs of the ubatch through the library's
// fused attention (shaped scores for soft-capping, ALiBi and sinks), on llama.cpp's
// compute threads (llama-tq-team.h), and the status a failed call leaves for llama_decode.
#include "llama-tq-memory.h"

#include "ggml.h"
#include "llama-impl.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace {

// Decode steps over fewer positions than this run their attention on thread 0 alone.
constexpr llama_pos k_serial_positions = 1024;

}  // namespace

void llama_tq_memory::attend(const llama_tq_layer_op & op, ggml_tensor * dst, int ith, int nth) {
    GGML_UNUSED(nth);
    if (ith != 0) {
        team.help(op.il);
        return;
    }
    // Decode over a short history: the library's tasks (one per KV head) take less than
    // handing them to another core does (measured: docs/llama.cpp.md).
    const bool serial = std::all_of(runs.begin(), runs.end(), [&](const run & r) {
        return r.tokens.size() == 1 && r.index < k_serial_positions;
    });
    team.lead(op.il, serial, [&] {
        for (const run & r : runs) {
            attend_run(op, r, dst);
        }
    });
}

void llama_tq_memory::attend_run(const llama_tq_layer_op & op, const run & r, ggml_tensor * dst) {
    const ggml_tensor * q = dst->src[0], * k = dst->src[1], * v = dst->src[2];
    const float * sinks = dst->src[3] != nullptr ? static_cast<const float *>(dst->src[3]->data) : nullptr;
    const size_t q_row = size_t(n_head) * n_embd_head, kv_row = size_t(n_head_kv) * n_embd_head;
    const int n = int(r.tokens.size()), t0 = r.tokens.front();
    const bool direct = r.tokens.back() - t0 == n - 1 && std::all_of(r.owns.begin(), r.owns.end(), [](bool o) { return o; });
    const float * qp = static_cast<const float *>(q->data) + size_t(t0) * q_row;
    const float * kp = static_cast<const float *>(k->data) + size_t(t0) * kv_row;
    const float * vp = static_cast<const float *>(v->data) + size_t(t0) * kv_row;
    float * out = static_cast<float *>(dst->data) + size_t(t0) * q_row;
    if (!direct) {  // interleaved with other sequences, or shared with them: this run's rows gathered
        gather.resize(size_t(n) * (2 * q_row + 2 * kv_row));
        float * gq = gather.data();
        float * gk = gq + size_t(n) * q_row;
        float * gv = gk + size_t(n) * kv_row;
        for (int j = 0; j < n; ++j) {
            const size_t t = size_t(r.tokens[j]);
            std::memcpy(gq + j * q_row, static_cast<const float *>(q->data) + t * q_row, q_row * sizeof(float));
            std::memcpy(gk + j * kv_row, static_cast<const float *>(k->data) + t * kv_row, kv_row * sizeof(float));
            std::memcpy(gv + j * kv_row, static_cast<const float *>(v->data) + t * kv_row, kv_row * sizeof(float));
        }
        qp = gq;
        kp = gk;
        vp = gv;
        out = gv + size_t(n) * kv_row;
    }
    const std::string why = attend_rows(op, r, sinks, qp, kp, vp, out);
    if (!why.empty()) {
        fail("layer " + std::to_string(op.il) + ", sequence " + std::to_string(r.seq) + ", position " +
             std::to_string(r.pos) + ": " + why);
        std::fill(out, out + size_t(n) * q_row, std::numeric_limits<float>::quiet_NaN());
    }
    if (!direct) {  // the rows this sequence owns
        for (int j = 0; j < n; ++j) {
            if (r.owns[j]) {
                std::memcpy(static_cast<float *>(dst->data) + size_t(r.tokens[j]) * q_row, out + j * q_row,
                            q_row * sizeof(float));
            }
        }
    }
}

std::string llama_tq_memory::attend_rows(const llama_tq_layer_op & op, const run & r, const float * sinks,
                                         const float * qp, const float * kp, const float * vp, float * out) {
    const size_t q_row = size_t(n_head) * n_embd_head, kv_row = size_t(n_head_kv) * n_embd_head;
    sequence & s = seqs[r.seq];
    const bool ring = has_ring && layer_swa[op.il];
    fa_tq_cache * cache = layer_swa[op.il] ? s.swa.get() : s.full.get();
    const int layer = layer_index[op.il], index = r.index - (ring ? s.ring_offset : 0), n = int(r.tokens.size());
    auto status = [](int rc) { return rc == FA_TQ_OK ? std::string() : std::string(fa_tq_last_error()); };
    const fa_tq_attend_options opt{op.kq_scale, softcap, alibi_slopes.empty() ? nullptr : alibi_slopes.data(), sinks};
    if (op.causal) {
        return status(n == 1 ? fa_tq_attention_ex(state.get(), cache, layer, index, qp, n_head, kp, vp, &opt, out)
                             : fa_tq_attention_batch_ex(state.get(), cache, layer, index, n, qp, n_head, kp, vp, &opt,
                                                        out));
    }
    // Causal attention switched off for this ubatch (mtmd's image chunks): every token
    // sees the whole run, as llama.cpp's mask lets it.  The run is written (its causal
    // outputs dropped), then each query attends at the run's last position, writing
    // that position's key and value again (the same codes).  A window that would
    // start past the sequence's first position differs per token there: refused.
    const int last = index + n - 1;
    if (!alibi_slopes.empty()) {  // each query's bias would be by |distance|, keys after it included
        return "non-causal attention with ALiBi is not supported";
    }
    if (layer_swa[op.il] && r.index + n - 1 >= int(n_swa)) {
        return "non-causal attention past the sliding window (" + std::to_string(n_swa) +
               " positions) is not supported";
    }
    int rc = fa_tq_attention_batch_ex(state.get(), cache, layer, index, n, qp, n_head, kp, vp, &opt, out);
    for (int j = 0; rc == FA_TQ_OK && j < n; ++j) {
        rc = fa_tq_attention_ex(state.get(), cache, layer, last, qp + j * q_row, n_head, kp + size_t(n - 1) * kv_row,
                                vp + size_t(n - 1) * kv_row, &opt, out + j * q_row);
    }
    return status(rc);
}

void llama_tq_memory::fail(const std::string & why) {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (error.empty()) {
        error = why;
    }
}

bool llama_tq_memory::take_status() {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (error.empty()) {
        return true;
    }
    LLAMA_LOG_ERROR("%s: tq KV cache: %s\n", __func__, error.c_str());
    error.clear();
    return false;
}

bool llama_tq_memory_compute_ok(llama_memory_i * memory) {
    auto * mem = dynamic_cast<llama_tq_memory *>(memory);
    return mem == nullptr || mem->take_status();
}
