// TurboQuant as a llama.cpp memory: per sequence, one compressed cache for the
// full-attention layers and one for the sliding-window layers (Gemma 3: a ring of
// the window and some slack, or with --swa-full a linear cache with the window),
// written and attended by the tq attention op (llama-tq-graph.cpp).  With a
// unified KV buffer (-kvu, llama-server's default) the sequences' linear caches
// grow and shrink within one pool of n_ctx positions.  docs/llama.cpp.md says
// what each llama_memory_i operation does here.
#pragma once

#include "llama-memory.h"
#include "llama-batch.h"
#include "llama-cparams.h"
#include "llama-tq-team.h"
#include "turboquant/turboquant.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct llama_model;
struct ggml_tensor;

class llama_tq_memory;

// What the op of one layer needs: the memory and the layer.  Owned by the memory,
// so that it outlives every graph that points at it.
struct llama_tq_layer_op {
    llama_tq_memory * mem;
    int il;
    float kq_scale;  // set when the graph is built
    bool causal;     // llama.cpp's causal_attn when the graph was built (a flip rebuilds it)
};

class llama_tq_memory : public llama_memory_i {
public:
    // Throws std::runtime_error("tq KV cache: <reason>") for what it cannot serve.
    llama_tq_memory(const llama_model & model, const llama_memory_params & params, const llama_cparams & cparams);

    llama_memory_context_ptr init_batch(llama_batch_allocr & balloc, uint32_t n_ubatch, bool embd_all) override;
    llama_memory_context_ptr init_full() override;
    llama_memory_context_ptr init_update(llama_context * lctx, bool optimize) override;
    // As llama_kv_cache: not with positions of several axes (M-RoPE).
    bool get_can_shift() const override { return n_pos_per_embd == 1; }

    void clear(bool data) override;
    bool seq_rm(llama_seq_id seq_id, llama_pos p0, llama_pos p1) override;
    void seq_cp(llama_seq_id seq_id_src, llama_seq_id seq_id_dst, llama_pos p0, llama_pos p1) override;
    void seq_keep(llama_seq_id seq_id) override;
    void seq_add(llama_seq_id seq_id, llama_pos p0, llama_pos p1, llama_pos shift) override;
    void seq_div(llama_seq_id seq_id, llama_pos p0, llama_pos p1, int d) override;
    llama_pos seq_pos_min(llama_seq_id seq_id) const override;
    llama_pos seq_pos_max(llama_seq_id seq_id) const override;
    std::map<ggml_backend_buffer_type_t, size_t> memory_breakdown() const override;
    void state_write(llama_io_write_i & io, llama_seq_id seq_id = -1, llama_state_seq_flags flags = 0) const override;
    void state_read(llama_io_read_i & io, llama_seq_id seq_id = -1, llama_state_seq_flags flags = 0) override;

    // The ubatch the next graph computes: its runs of consecutive positions per
    // sequence (checked by init_batch).  False (logged) if a cache cannot grow for it.
    bool apply_ubatch(const llama_ubatch & ubatch);
    // Whether tokens in `ubatches`, in order, fit the caches; else the reason.
    bool fits(const std::vector<llama_ubatch> & ubatches, std::string & why) const;

    // The op: thread ith of nth of layer op.il.  dst[n_head * head_dim, n_tokens].
    void attend(const llama_tq_layer_op & op, ggml_tensor * dst, int ith, int nth);
    // After a compute: false (and the reason logged) if a library call failed.
    bool take_status();

    llama_tq_layer_op * layer_op(int il) { return &ops[il]; }
    int head_dim() const { return n_embd_head; }

    // Throws std::runtime_error("tq KV cache: " + why).
    [[noreturn]] static void refuse(const std::string & why);

private:
    static constexpr uint32_t k_page = 256;  // a pool's linear caches take room in multiples of this
    struct free_cache {
        void operator()(fa_tq_cache * c) const { fa_tq_cache_free(c); }
    };
    struct free_state {
        void operator()(fa_tq_state * s) const { fa_tq_free(s); }
    };
    using cache_ptr = std::unique_ptr<fa_tq_cache, free_cache>;
    struct sequence {
        cache_ptr full;  // the full-attention layers (linear)
        cache_ptr swa;   // the sliding-window layers, if apart (a ring, or linear with --swa-full)
        // Per cache index, the position its key was written at (increasing; a shift
        // moves them, a removal in the middle leaves a gap until a shift closes it).
        std::vector<llama_pos> positions;
        int ring_offset = 0;  // the cache index at the ring's index 0
        // Cache entries [hole_at, hole_at + hole_size) removed from positions but not yet
        // from the caches: a removal and the shift that follows re-encode once.
        int hole_at = 0, hole_size = 0;
        int capacity = 0;  // positions the linear caches have room for
    };
    struct run {  // consecutive positions of one sequence in the current ubatch
        llama_seq_id seq;
        llama_pos pos;
        int index;                    // the cache index of its first token
        std::vector<int32_t> tokens;  // indices in the ubatch
        std::vector<bool> owns;       // per token: its output is this sequence's (its first seq id)
    };
    void reset(sequence & s);
    static int held(const sequence & s) { return int(s.positions.size()); }
    static int index_of(const sequence & s, llama_pos p) {  // the first cache index at p or later
        return int(std::lower_bound(s.positions.begin(), s.positions.end(), p) - s.positions.begin());
    }
    // Re-encodes the caches from the hole (or cache index `from`, if earlier) on, without
    // the hole, the key of each index i in [a, a + deltas.size()) turned by the RoPE of a
    // change of deltas[i - a] (the caller moves their positions).
    bool rewrite(sequence & s, int from, int a, const std::vector<llama_pos> & deltas);
    bool settle(sequence & s) { return s.hole_size == 0 || rewrite(s, s.hole_at, 0, {}); }
    // Moves positions [p0, p1) of sequence seq_id (all if < 0) to new_pos(p) (seq_add,
    // seq_div): keys turned by the RoPE of turn_sign x (new_pos(p) - p).  `what` names
    // the operation in a refusal.
    template <typename F>
    void move_positions(llama_seq_id seq_id, llama_pos p0, llama_pos p1, F new_pos, int turn_sign, const char * what);
    std::vector<fa_tq_cache *> linear_caches(sequence & s) const;
    // Room in s's linear caches for `length` positions (more, within the pool, so that
    // growing costs few copies); in a pool, also less when it holds far fewer.
    bool fit_capacity(sequence & s, int length);
    bool truncate(sequence & s, int length);  // keep the first `length` positions
    // seq_cp of part of a sequence: from's entries [i0, i1) decoded and encoded after
    // what `to` (sequence dst) holds; refused (one line) where that would break its order.
    void append_range(sequence & from, sequence & to, int i0, int i1, llama_seq_id dst);
    // dst's sources: q, k, v, and the learned sinks (per query head) if the model has them.
    void attend_run(const llama_tq_layer_op & op, const run & r, ggml_tensor * dst);
    // The library's calls for one run, on rows of n tokens (qp, kp, vp, out); the
    // reason if refused, else empty.
    std::string attend_rows(const llama_tq_layer_op & op, const run & r, const float * sinks, const float * qp,
                            const float * kp, const float * vp, float * out);
    void fail(const std::string & why);
    void read_sequences(llama_io_read_i & io, llama_seq_id seq_id, uint32_t count, bool partial);  // state_read's body
    void read_cache(llama_io_read_i & io, fa_tq_cache * c, std::vector<uint8_t> & bytes);

    const llama_model & model;
    const llama_cparams cparams;  // RoPE's parameters for a shift
    int n_layer, n_head, n_head_kv, n_embd_head;
    uint32_t n_pos_per_embd;          // 1, or M-RoPE's axes per token
    float softcap = 0;                // > 0: scores capped (Gemma 2)
    std::vector<float> alibi_slopes;  // per query head, or empty
    uint32_t n_seq_max, n_ctx_seq, n_swa;
    uint32_t pool;   // with a unified buffer: positions all sequences hold together (n_ctx); else 0
    bool swa_apart;  // sliding-window layers in caches of their own (n_swa < n_ctx_seq)
    bool has_ring;   // ... and those are rings (not --swa-full)
    int ring_cap = 0;  // a ring's positions: the window and the slack
    bool probe;     // no_alloc: caches of one position, for the byte figures only
    std::unique_ptr<fa_tq_state, free_state> state;
    std::vector<bool> layer_swa;   // per model layer: in the sliding-window cache
    std::vector<int> layer_index;  // per model layer: its layer in that cache
    std::vector<sequence> seqs;
    std::vector<llama_tq_layer_op> ops;
    std::vector<run> runs;  // the current ubatch
    std::vector<float> gather;  // q, k, v and out of a run whose tokens are not contiguous
    llama_tq_team team;
    std::mutex error_mutex;
    std::string error;  // the first failure of the current compute
};

class llama_tq_memory_context : public llama_memory_context_i {
public:
    explicit llama_tq_memory_context(llama_memory_status status) : status(status) {}
    llama_tq_memory_context(llama_tq_memory * mem, std::vector<llama_ubatch> ubatches)
        : status(LLAMA_MEMORY_STATUS_SUCCESS), mem(mem), ubatches(std::move(ubatches)) {}
    explicit llama_tq_memory_context(llama_tq_memory * mem) : status(LLAMA_MEMORY_STATUS_SUCCESS), mem(mem) {}

    bool next() override { return ++i_cur < ubatches.size(); }
    bool apply() override;
    const llama_ubatch & get_ubatch() const override { return ubatches[i_cur]; }
    llama_memory_status get_status() const override { return status; }

    llama_tq_memory * memory() const { return mem; }

private:
    llama_memory_status status;
    llama_tq_memory * mem = nullptr;
    std::vector<llama_ubatch> ubatches;
    size_t i_cur = 0;
};

// ALiBi's slope per query head, as ggml_flash_attn_ext derives it from the head
// count and the model's max bias.
std::vector<float> llama_tq_alibi_slopes(int n_head, float max_bias);

// For llama_model::create_memory: the memory when the cache types are tq.
llama_memory_i * llama_tq_memory_create(const llama_model & model, const llama_memory_params & params,
                                        const llama_cparams & cparams);
// For llama_context::process_ubatch, after graph_compute: false if the tq memory's
// op failed in it (the reason is logged); true for any other memory.
bool llama_tq_memory_compute_ok(llama_memory_i * memory);
// For llama_init_from_model, before the context exists: the checks that need only
// the parameters (K and V both tq; flash attention on, AUTO turned on).  Logs one
// line and returns false to refuse.
bool llama_tq_check_params(llama_context_params & params);
