#include "llama-tq-memory.h"

#include "llama-tq.h"

#include "ggml-backend.h"
#include "llama-arch.h"
#include "llama-cparams.h"
#include "llama-impl.h"
#include "llama-io.h"
#include "llama-model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace {

[[noreturn]] void refuse(const std::string & why) {
    throw std::runtime_error("tq KV cache: " + why);
}

// The rotation's seed: fixed, so that a cache type means one quantizer everywhere.
constexpr uint64_t k_seed = 0;
// Decode steps over fewer positions than this run their attention on thread 0 alone.
constexpr llama_pos k_serial_positions = 1024;

// LLAMA_TQ_ARITHMETIC (environment): "float" (or unset) keeps the library's float scores
// and value sums; "int8" asks for its integer paths (docs/kernels.md) for K and for V
// wherever their rate's kernels have one: the score at every rate (int16 tables above 5
// bits), the value sum at 5 bits and below, float above.
// llama_context_params has no field for it, and the cache types name rates only.
bool integer_arithmetic() {
    const char * v = std::getenv("LLAMA_TQ_ARITHMETIC");
    if (v == nullptr || std::strcmp(v, "float") == 0) {
        return false;
    }
    if (std::strcmp(v, "int8") == 0) {
        return true;
    }
    refuse(std::string("LLAMA_TQ_ARITHMETIC is '") + v + "', not float or int8");
}

}  // namespace

llama_tq_memory::llama_tq_memory(const llama_model & model, const llama_memory_params & params,
                                 const llama_cparams & cparams) {
    const llama_hparams & hp = model.hparams;
    if (!llama_tq_is_type(params.type_k) || !llama_tq_is_type(params.type_v)) {
        refuse(std::string("K and V must both be tq types (K ") + llama_tq_type_name(params.type_k) + ", V " +
               llama_tq_type_name(params.type_v) + ")");
    }
    if (model.arch != LLM_ARCH_LLAMA && model.arch != LLM_ARCH_GEMMA3) {
        refuse(std::string("model architecture '") + llm_arch_name(model.arch) +
               "' is not supported (llama and gemma3 are)");
    }
    if (params.ctx_type != LLAMA_CONTEXT_TYPE_DEFAULT || params.mem_other != nullptr) {
        refuse("a context that shares another context's memory is not supported");
    }
    if (!cparams.causal_attn || hp.use_alibi || hp.attn_soft_cap || hp.n_pos_per_embd() > 1) {
        refuse("only causal attention without ALiBi, logit soft-capping or multi-axis positions is supported");
    }
    if (hp.swa_type != LLAMA_SWA_TYPE_NONE && hp.swa_type != LLAMA_SWA_TYPE_STANDARD) {
        refuse("only the standard sliding window is supported");
    }
    n_layer = int(hp.n_layer());
    n_head = int(hp.n_head(0));
    n_head_kv = int(hp.n_head_kv(0));
    n_embd_head = int(hp.n_embd_head_k(0));
    for (int il = 0; il < n_layer; ++il) {
        if (int(hp.n_embd_head_k(il)) != n_embd_head || int(hp.n_embd_head_v(il)) != n_embd_head ||
            int(hp.n_head(il)) != n_head || int(hp.n_head_kv(il)) != n_head_kv) {
            refuse("layers with different head dims or head counts are not supported");
        }
        ggml_backend_dev_t dev = model.dev_layer(il);
        if (cparams.offload_kqv && dev != nullptr && ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_CPU) {
            refuse(std::string("the cache runs on the CPU, but layer ") + std::to_string(il) + " is on " +
                   ggml_backend_dev_name(dev) + ": use -ngl 0 or --no-kv-offload");
        }
    }
    n_seq_max = cparams.n_seq_max;
    n_ctx_seq = cparams.n_ctx_seq;
    if (cparams.kv_unified && n_seq_max > 1) {
        // No shared pool of cells: each sequence gets an equal share of the context,
        // as without a unified buffer (llama-server's default -np auto asks for one).
        n_ctx_seq = cparams.n_ctx / n_seq_max;
        LLAMA_LOG_WARN("%s: tq KV cache: no unified KV buffer; each of the %u sequences holds up to %u positions\n",
                       __func__, n_seq_max, n_ctx_seq);
    }
    n_swa = hp.swa_type == LLAMA_SWA_TYPE_STANDARD ? hp.n_swa : 0;
    has_ring = n_swa > 0 && n_swa < n_ctx_seq;

    fa_tq_config config = fa_tq_config_default();
    config.key_bits = llama_tq_type_bits(params.type_k);
    config.value_bits = llama_tq_type_bits(params.type_v);
    const tq_kernels * kern = nullptr;  // none: fa_tq_init below refuses the rates
    if (integer_arithmetic() && tq_find(n_embd_head, config.key_bits, config.value_bits, &kern) == TQ_OK) {
        // The integer paths wherever the build's kernels for these rates have them.
        config.score = kern->key->score_int ? FA_TQ_SCORE_INT8 : FA_TQ_SCORE_FLOAT;
        config.value_sum = kern->value->accumulate_int ? FA_TQ_VALUE_SUM_INT8 : FA_TQ_VALUE_SUM_FLOAT;
        LLAMA_LOG_INFO("%s: tq KV cache: %s scores, %s value sums (LLAMA_TQ_ARITHMETIC=int8)\n", __func__,
                       config.score == FA_TQ_SCORE_INT8 ? "integer" : "float",
                       config.value_sum == FA_TQ_VALUE_SUM_INT8 ? "integer" : "float");
    }
    state.reset(fa_tq_init(n_embd_head, config, k_seed));
    if (state == nullptr) {
        refuse(fa_tq_last_error());
    }
    int n_full = 0, n_ring = 0;
    for (int il = 0; il < n_layer; ++il) {
        const bool swa = has_ring && hp.is_swa(il);
        layer_swa.push_back(swa);
        layer_index.push_back(swa ? n_ring++ : n_full++);
        ops.push_back({this, il, 0.0f});
    }
    // With no_alloc (llama.cpp's memory fitting), caches of one position report the
    // bytes per position and the fixed part; nothing of the context's size is allocated.
    probe = hp.no_alloc;
    const int cap_full = probe ? 1 : int(n_ctx_seq), cap_ring = probe ? 1 : int(n_swa);
    const std::vector<const fa_tq_state *> states(size_t(n_layer), state.get());
    seqs.resize(n_seq_max);
    auto make = [&](int layers, int cap, bool ring) {
        cache_ptr c;
        if (layers > 0) {
            c.reset(fa_tq_cache_new_layers(states.data(), layers, n_head_kv, cap, ring));
            if (c == nullptr) {
                refuse(fa_tq_last_error());
            }
            fa_tq_cache_set_parallel_for(c.get(), &llama_tq_team::parallel_for, &team);
        }
        return c;
    };
    for (auto & s : seqs) {
        s.full = make(n_full, cap_full, false);
        s.swa = make(n_ring, cap_ring, true);
        if (probe) {
            break;  // one sequence's caches tell the bytes of all
        }
    }
    size_t total = 0;
    for (const auto & [buft, bytes] : memory_breakdown()) {
        total += bytes;
    }
    double per_token = 0;
    for (const fa_tq_cache * c : {seqs[0].full.get(), seqs[0].swa.get()}) {
        per_token += c ? fa_tq_cache_bytes_per_token_all_in(c) : 0.0;
    }
    LLAMA_LOG_INFO("%s: size = %7.2f MiB (%6u cells, %3d layers, %2u seqs%s), K (%s), V (%s): %.1f bytes/token all in\n",
                   __func__, double(total) / (1024.0 * 1024.0), n_ctx_seq, n_layer, n_seq_max,
                   has_ring ? (", sliding-window layers in rings of " + std::to_string(n_swa)).c_str() : "",
                   llama_tq_type_name(params.type_k), llama_tq_type_name(params.type_v), per_token);
}

// --- batches -----------------------------------------------------------------

bool llama_tq_memory::fits(const std::vector<llama_ubatch> & ubatches, std::string & why) const {
    std::vector<llama_pos> base(n_seq_max);
    for (uint32_t s = 0; s < n_seq_max; ++s) {
        base[s] = seqs[s].pos_base;
    }
    for (const auto & ub : ubatches) {
        for (uint32_t i = 0; i < ub.n_tokens; ++i) {
            if (ub.n_seq_id[i] != 1) {
                why = "a token shared by several sequences is not supported";
                return false;
            }
            const llama_seq_id s = ub.seq_id[i][0];
            if (s < 0 || uint32_t(s) >= n_seq_max) {
                why = "sequence id " + std::to_string(s) + " is beyond the context's " + std::to_string(n_seq_max);
                return false;
            }
            if (base[s] < 0) {
                base[s] = ub.pos[i];
            }
            if (ub.pos[i] < base[s] || ub.pos[i] - base[s] >= llama_pos(n_ctx_seq)) {
                why = "position " + std::to_string(ub.pos[i]) + " of sequence " + std::to_string(s) +
                      " is beyond the context of " + std::to_string(n_ctx_seq) + " positions per sequence";
                return false;
            }
        }
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
    if (mem != nullptr && i_cur < ubatches.size()) {
        mem->apply_ubatch(ubatches[i_cur]);
    }
    return true;
}

void llama_tq_memory::apply_ubatch(const llama_ubatch & ub) {
    runs.clear();
    team.next_compute();
    {
        std::lock_guard<std::mutex> lock(error_mutex);
        error.clear();  // a compute aborted before its status was taken
    }
    for (uint32_t i = 0; i < ub.n_tokens; ++i) {
        const llama_seq_id s = ub.seq_id[i][0];
        const llama_pos p = ub.pos[i];
        auto it = std::find_if(runs.begin(), runs.end(), [&](const run & r) {
            return r.seq == s && r.pos + llama_pos(r.tokens.size()) == p;
        });
        if (it == runs.end()) {
            runs.push_back({s, p, {}});
            it = runs.end() - 1;
        }
        it->tokens.push_back(int32_t(i));
        sequence & seq = seqs[s];
        if (seq.pos_base < 0) {
            seq.pos_base = p;
        }
        seq.pos_max = std::max(seq.pos_max, p);
    }
}

// --- attention -----------------------------------------------------------------

void llama_tq_memory::attend(const llama_tq_layer_op & op, ggml_tensor * dst, int ith, int nth) {
    GGML_UNUSED(nth);
    if (ith != 0) {
        team.help(op.il);
        return;
    }
    // Decode over a short history: the library's tasks (one per KV head) take less than
    // handing them to another core does (measured: docs/llama.cpp.md).
    const bool serial = std::all_of(runs.begin(), runs.end(), [&](const run & r) {
        return r.tokens.size() == 1 && r.pos - seqs[r.seq].pos_base < k_serial_positions;
    });
    team.lead(op.il, serial, [&] {
        for (const run & r : runs) {
            attend_run(op, r, dst->src[0], dst->src[1], dst->src[2], dst);
        }
    });
}

void llama_tq_memory::attend_run(const llama_tq_layer_op & op, const run & r, const ggml_tensor * q,
                                 const ggml_tensor * k, const ggml_tensor * v, ggml_tensor * dst) {
    const size_t q_row = size_t(n_head) * n_embd_head, kv_row = size_t(n_head_kv) * n_embd_head;
    const int n = int(r.tokens.size()), t0 = r.tokens.front();
    const bool contiguous = r.tokens.back() - t0 == n - 1;
    const float * qp = static_cast<const float *>(q->data) + size_t(t0) * q_row;
    const float * kp = static_cast<const float *>(k->data) + size_t(t0) * kv_row;
    const float * vp = static_cast<const float *>(v->data) + size_t(t0) * kv_row;
    float * out = static_cast<float *>(dst->data) + size_t(t0) * q_row;
    if (!contiguous) {  // several sequences interleaved in the ubatch: gather this one's tokens
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
    sequence & s = seqs[r.seq];
    fa_tq_cache * cache = layer_swa[op.il] ? s.swa.get() : s.full.get();
    const int layer = layer_index[op.il], index = r.pos - s.pos_base;
    const int rc = n == 1 ? fa_tq_attention(state.get(), cache, layer, index, qp, n_head, kp, vp, op.kq_scale, out)
                          : fa_tq_attention_batch(state.get(), cache, layer, index, n, qp, n_head, kp, vp, op.kq_scale,
                                                  out);
    if (rc != FA_TQ_OK) {
        fail("layer " + std::to_string(op.il) + ", sequence " + std::to_string(r.seq) + ", position " +
             std::to_string(r.pos) + ": " + fa_tq_last_error());
        std::fill(out, out + size_t(n) * q_row, std::numeric_limits<float>::quiet_NaN());
    }
    if (!contiguous) {
        for (int j = 0; j < n; ++j) {
            std::memcpy(static_cast<float *>(dst->data) + size_t(r.tokens[j]) * q_row, out + j * q_row,
                        q_row * sizeof(float));
        }
    }
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

// --- sequences -----------------------------------------------------------------

void llama_tq_memory::reset(sequence & s) {
    for (fa_tq_cache * c : {s.full.get(), s.swa.get()}) {
        if (c != nullptr) {
            fa_tq_cache_clear(c);
        }
    }
    s.pos_base = s.pos_max = -1;
}

void llama_tq_memory::clear(bool data) {
    GGML_UNUSED(data);
    for (auto & s : seqs) {
        reset(s);
    }
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
        if (s.pos_max < 0 || p0 > s.pos_max || p1 <= s.pos_base || p0 >= p1) {
            return true;  // nothing held in [p0, p1)
        }
        if (p0 <= s.pos_base && p1 > s.pos_max) {
            reset(s);
            return true;
        }
        if (has_ring) {
            // A ring cannot give back the positions that the removed ones overwrote, and
            // a rolled-back ubatch may have reached only some layers: the sequence is
            // emptied (llama.cpp's callers then decode it again) and the call fails.
            reset(s);
            return false;
        }
        if (p1 > s.pos_max) {  // a tail: later writes overwrite it
            s.pos_max = p0 - 1;
            return true;
        }
        if (p0 <= s.pos_base) {  // a head: the positions move down, the sequence's positions stay
            if (fa_tq_cache_evict(s.full.get(), p1 - s.pos_base) != FA_TQ_OK) {
                return false;
            }
            s.pos_base = p1;
            return true;
        }
        return false;  // a range in the middle
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
    const bool whole = (p0 < 0 || p0 <= from.pos_base) && (p1 < 0 || p1 > from.pos_max);
    if (!whole) {
        LLAMA_LOG_ERROR("%s: tq KV cache: copying part of a sequence is not supported; sequence %d left as it was\n",
                        __func__, dst);
        return;
    }
    for (auto [d, s] : {std::pair{to.full.get(), from.full.get()}, std::pair{to.swa.get(), from.swa.get()}}) {
        if (d != nullptr && fa_tq_cache_copy(d, s) != FA_TQ_OK) {
            LLAMA_LOG_ERROR("%s: tq KV cache: %s\n", __func__, fa_tq_last_error());
            reset(to);
            return;
        }
    }
    to.pos_base = from.pos_base;
    to.pos_max = from.pos_max;
}

void llama_tq_memory::seq_keep(llama_seq_id seq_id) {
    for (uint32_t s = 0; s < n_seq_max; ++s) {
        if (llama_seq_id(s) != seq_id) {
            reset(seqs[s]);
        }
    }
}

void llama_tq_memory::seq_add(llama_seq_id seq_id, llama_pos p0, llama_pos p1, llama_pos shift) {
    GGML_UNUSED(p0);
    GGML_UNUSED(p1);
    if (shift != 0) {
        LLAMA_LOG_ERROR("%s: tq KV cache: shifting positions (context shift) is not supported; sequence %d left as "
                        "it was\n", __func__, seq_id);
    }
}

void llama_tq_memory::seq_div(llama_seq_id seq_id, llama_pos p0, llama_pos p1, int d) {
    GGML_UNUSED(p0);
    GGML_UNUSED(p1);
    if (d != 1) {
        LLAMA_LOG_ERROR("%s: tq KV cache: dividing positions (self-extend) is not supported; sequence %d left as it "
                        "was\n", __func__, seq_id);
    }
}

llama_pos llama_tq_memory::seq_pos_min(llama_seq_id seq_id) const {
    if (seq_id < 0 || uint32_t(seq_id) >= n_seq_max || seqs[seq_id].pos_max < 0) {
        return -1;
    }
    const sequence & s = seqs[seq_id];
    // With rings, what every layer still holds: the last n_swa positions.
    return has_ring ? std::max(s.pos_base, s.pos_max - llama_pos(n_swa) + 1) : s.pos_base;
}

llama_pos llama_tq_memory::seq_pos_max(llama_seq_id seq_id) const {
    if (seq_id < 0 || uint32_t(seq_id) >= n_seq_max) {
        return -1;
    }
    return seqs[seq_id].pos_max;
}

std::map<ggml_backend_buffer_type_t, size_t> llama_tq_memory::memory_breakdown() const {
    size_t bytes = 0;
    for (const auto & s : seqs) {
        for (auto [c, cap] : {std::pair{s.full.get(), n_ctx_seq}, std::pair{s.swa.get(), n_swa}}) {
            size_t per_token = 0, total = 0;
            if (c != nullptr && fa_tq_cache_bytes(c, &per_token, &total) == FA_TQ_OK) {
                // probe: a cache of one position, scaled to the context and every sequence
                bytes += probe ? (total + per_token * (size_t(cap) - 1)) * n_seq_max : total;
            }
        }
    }
    return {{ggml_backend_cpu_buffer_type(), bytes}};
}

// The state: a header, then per sequence its id, first and last position, and each
// of its caches as fa_tq_cache_serialize writes it (machine-local, as llama.cpp's
// own state is).
constexpr uint32_t k_state_magic = 0x564b5154;  // "TQKV"
constexpr uint32_t k_state_version = 1;

void llama_tq_memory::state_write(llama_io_write_i & io, llama_seq_id seq_id, llama_state_seq_flags flags) const {
    GGML_UNUSED(flags);  // the sliding-window part alone (PARTIAL_ONLY) is written whole, like the rest
    std::vector<uint32_t> chosen;
    for (uint32_t s = 0; s < n_seq_max; ++s) {
        if ((seq_id < 0 || llama_seq_id(s) == seq_id) && seqs[s].pos_max >= 0) {
            chosen.push_back(s);
        }
    }
    const uint32_t header[3] = {k_state_magic, k_state_version, uint32_t(chosen.size())};
    io.write(header, sizeof(header));
    std::vector<uint8_t> bytes;
    for (uint32_t s : chosen) {
        const int32_t ids[3] = {int32_t(s), seqs[s].pos_base, seqs[s].pos_max};
        io.write(ids, sizeof(ids));
        for (const fa_tq_cache * c : {seqs[s].full.get(), seqs[s].swa.get()}) {
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
    GGML_UNUSED(flags);
    uint32_t header[3] = {0, 0, 0};
    io.read(header, sizeof(header));
    if (header[0] != k_state_magic || header[1] != k_state_version) {
        refuse("the state was not written by this version of the tq KV cache");
    }
    if (seq_id >= 0 ? header[2] > 1 : header[2] > n_seq_max) {
        refuse("the state holds " + std::to_string(header[2]) + " sequences, more than this context takes");
    }
    if (seq_id < 0) {
        clear(true);
    } else {
        seq_rm(seq_id, -1, -1);
    }
    try {
        read_sequences(io, seq_id, header[2]);
    } catch (...) {  // no sequence left half-restored
        if (seq_id < 0) {
            clear(true);
        } else {
            seq_rm(seq_id, -1, -1);
        }
        throw;
    }
}

void llama_tq_memory::read_sequences(llama_io_read_i & io, llama_seq_id seq_id, uint32_t count) {
    std::vector<uint8_t> bytes;
    for (uint32_t i = 0; i < count; ++i) {
        int32_t ids[3] = {0, 0, 0};
        io.read(ids, sizeof(ids));
        const llama_seq_id dst = seq_id >= 0 ? seq_id : ids[0];
        if (dst < 0 || uint32_t(dst) >= n_seq_max || ids[1] < 0 || ids[2] < ids[1] ||
            int64_t(ids[2]) - ids[1] >= int64_t(n_ctx_seq)) {
            refuse("the state's sequence " + std::to_string(ids[0]) + " does not fit this context");
        }
        sequence & s = seqs[dst];
        for (fa_tq_cache * c : {s.full.get(), s.swa.get()}) {
            uint64_t size = 0;
            io.read(&size, sizeof(size));
            if ((c == nullptr) != (size == 0)) {
                refuse("the state's caches do not match this context's layers");
            }
            bytes.resize(size_t(size));
            io.read(bytes.data(), bytes.size());
            if (c != nullptr && fa_tq_cache_deserialize(c, bytes.data(), bytes.size()) != FA_TQ_OK) {
                refuse(fa_tq_last_error());
            }
        }
        s.pos_base = ids[1];
        s.pos_max = ids[2];
        // (a linear cache may hold more: a removed tail stays until overwritten)
        if (fa_tq_cache_seq_len(s.full ? s.full.get() : s.swa.get()) < s.pos_max - s.pos_base + 1) {
            refuse("the state's positions do not match its caches");
        }
    }
}

// --- hooks -------------------------------------------------------------------------

llama_memory_i * llama_tq_memory_create(const llama_model & model, const llama_memory_params & params,
                                        const llama_cparams & cparams) {
    return new llama_tq_memory(model, params, cparams);
}

bool llama_tq_memory_compute_ok(llama_memory_i * memory) {
    auto * mem = dynamic_cast<llama_tq_memory *>(memory);
    return mem == nullptr || mem->take_status();
}

bool llama_tq_check_params(llama_context_params & params) {
    const bool k = llama_tq_is_type(params.type_k), v = llama_tq_is_type(params.type_v);
    if (!k && !v) {
        return true;
    }
    if (k != v) {
        LLAMA_LOG_ERROR("%s: tq KV cache: K and V must both be tq types (K %s, V %s)\n", __func__,
                        llama_tq_type_name(params.type_k), llama_tq_type_name(params.type_v));
        return false;
    }
    if (params.flash_attn_type == LLAMA_FLASH_ATTN_TYPE_DISABLED) {
        LLAMA_LOG_ERROR("%s: tq KV cache: needs flash attention (-fa on or auto)\n", __func__);
        return false;
    }
    if (params.flash_attn_type == LLAMA_FLASH_ATTN_TYPE_AUTO) {
        LLAMA_LOG_INFO("%s: enabling flash_attn since it is required for the tq KV cache\n", __func__);
        params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
    }
    return true;
}
