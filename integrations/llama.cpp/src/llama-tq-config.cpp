// The tq memory's configuration: what it refuses at context creation (one line each,
// docs/llama.cpp.md "Refused at context creation"), the quantizer and the caches it
// builds for a model and context, and the hooks llama.cpp calls to create it.
#include "llama-tq-memory.h"

#include "llama-tq.h"

#include "ggml-backend.h"
#include "llama-arch.h"
#include "llama-cparams.h"
#include "llama-impl.h"
#include "llama-kv-cache-iswa.h"
#include "llama-kv-cache.h"
#include "llama-memory-hybrid-iswa.h"
#include "llama-memory-hybrid.h"
#include "llama-memory-recurrent.h"
#include "llama-model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <typeinfo>

namespace {

// The rotation's seed: fixed, so that a cache type means one quantizer everywhere.
constexpr uint64_t k_seed = 0;

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
    llama_tq_memory::refuse(std::string("LLAMA_TQ_ARITHMETIC is '") + v + "', not float or int8");
}

}  // namespace

std::vector<float> llama_tq_alibi_slopes(int n_head, float max_bias) {
    // ggml's: the heads up to the largest power of two n2 <= n_head take m0^(h+1),
    // m0 = 2^(-max_bias / n2); the rest interleave between them: m1^(2(h - n2) + 1).
    if (!(max_bias > 0)) {
        return std::vector<float>(static_cast<size_t>(n_head), 1.0f);  // ggml's slope without a max bias
    }
    const int n2 = 1 << int(std::floor(std::log2(double(n_head))));
    const float m0 = std::pow(2.0f, -max_bias / float(n2)), m1 = std::pow(2.0f, -(max_bias / 2.0f) / float(n2));
    std::vector<float> slopes(static_cast<size_t>(n_head));
    for (int h = 0; h < n_head; ++h) {
        slopes[size_t(h)] = h < n2 ? std::pow(m0, float(h + 1)) : std::pow(m1, float(2 * (h - n2) + 1));
    }
    return slopes;
}

void llama_tq_memory::refuse(const std::string & why) {
    throw std::runtime_error("tq KV cache: " + why);
}

llama_tq_memory::llama_tq_memory(const llama_model & model, const llama_memory_params & params,
                                 const llama_cparams & cparams)
    : model(model), cparams(cparams) {
    const llama_hparams & hp = model.hparams;
    if (!llama_tq_is_type(params.type_k) || !llama_tq_is_type(params.type_v)) {
        refuse(std::string("K and V must both be tq types (K ") + llama_tq_type_name(params.type_k) + ", V " +
               llama_tq_type_name(params.type_v) + ")");
    }
    if (params.ctx_type != LLAMA_CONTEXT_TYPE_DEFAULT || params.mem_other != nullptr) {
        refuse("a context that shares another context's memory is not supported");
    }
    if (!cparams.flash_attn) {  // llama_tq_check_params turned it on; llama.cpp turned it off again
        refuse("llama.cpp turns flash attention off for this model (its attention differs from flash attention's: "
               "Grok's capped scores), and the tq cache attends as flash attention does");
    }
    if (hp.swa_type != LLAMA_SWA_TYPE_NONE && hp.swa_type != LLAMA_SWA_TYPE_STANDARD) {
        refuse("only the standard sliding window is supported");
    }
    n_layer = int(hp.n_layer());
    n_head = int(hp.n_head(0));
    n_head_kv = int(hp.n_head_kv(0));
    n_pos_per_embd = hp.n_pos_per_embd();
    n_embd_head = int(hp.n_embd_head_k(0));
    for (int il = 0; il < n_layer; ++il) {
        if (hp.n_embd_head_k(il) != hp.n_embd_head_v(il)) {
            refuse("keys and values of different head dims (" + std::to_string(hp.n_embd_head_k(il)) + " and " +
                   std::to_string(hp.n_embd_head_v(il)) + ": MLA's compressed cache) are not supported");
        }
        if (int(hp.n_embd_head_k(il)) != n_embd_head ||
            int(hp.n_head(il)) != n_head || int(hp.n_head_kv(il)) != n_head_kv) {
            refuse("layers with different head dims or head counts are not supported");
        }
        ggml_backend_dev_t dev = model.dev_layer(il);
        if (cparams.offload_kqv && dev != nullptr && ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_CPU) {
            refuse(std::string("the cache runs on the CPU, but layer ") + std::to_string(il) + " is on " +
                   ggml_backend_dev_name(dev) + ": use -ngl 0 or --no-kv-offload");
        }
    }
    // What the op adds to the scores, as ggml_flash_attn_ext does (llm_graph_context::build_attn_mha).
    softcap = hp.attn_soft_cap ? hp.f_attn_logit_softcapping : 0.0f;
    if (hp.use_alibi) {
        alibi_slopes = llama_tq_alibi_slopes(n_head, hp.f_max_alibi_bias);
    }
    n_seq_max = cparams.n_seq_max;
    n_ctx_seq = cparams.n_ctx_seq;  // with a unified buffer, n_ctx: any sequence may take the whole pool
    pool = cparams.kv_unified && n_seq_max > 1 ? cparams.n_ctx : 0;
    n_swa = hp.swa_type == LLAMA_SWA_TYPE_STANDARD ? hp.n_swa : 0;
    swa_apart = n_swa > 0 && n_swa < n_ctx_seq;
    has_ring = swa_apart && !params.swa_full;
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
        // The library names its own CMake variables; libllama's kernels come from these.
        std::string why = fa_tq_last_error();
        const std::string library_hint = "-DTQ_HEAD_DIMS=... -DTQ_BITS=...";
        if (const size_t at = why.find(library_hint); at != std::string::npos) {
            why.replace(at, library_hint.size(), "-DTQ_LLAMACPP_HEAD_DIMS=... -DTQ_LLAMACPP_BITS=...");
        }
        refuse(why);
    }
    int n_full = 0, n_ring = 0;
    for (int il = 0; il < n_layer; ++il) {
        const bool swa = swa_apart && hp.is_swa(il);
        layer_swa.push_back(swa);
        layer_index.push_back(swa ? n_ring++ : n_full++);
        ops.push_back({this, il, 0.0f, true});
    }
    // With no_alloc (llama.cpp's memory fitting), caches of one position report the
    // bytes per position and the fixed part; nothing of the context's size is allocated.
    probe = hp.no_alloc;
    // A ring keeps the window and some slack: removing that many recent positions
    // (the server's one-token tail after a checkpoint, rejected draft tokens: 16 by
    // default) is exact.  llama.cpp's SWA cache keeps window + ubatch cells; in a
    // unified buffer the sequences share the ubatch's, and these rings keep at most 64
    // each, so that their bytes with the fixed parts stay below q4_0's (measured:
    // docs/llama.cpp.md).
    const uint32_t slack = pool > 0 ? std::max(16u, std::min(64u, cparams.n_ubatch / n_seq_max)) : cparams.n_ubatch;
    ring_cap = int(n_swa + slack);
    const int cap_ring = probe ? 1 : ring_cap;
    // Linear caches: the whole context per sequence, or in a pool room that grows on demand.
    const int cap_linear = probe ? 1 : pool > 0 ? int(std::min(n_ctx_seq, k_page)) : int(n_ctx_seq);
    const std::vector<const fa_tq_state *> states(size_t(n_layer), state.get());
    seqs.resize(n_seq_max);
    auto make = [&](int layers, int cap, bool ring, int window) {
        cache_ptr c;
        if (layers > 0) {
            c.reset(fa_tq_cache_new_layers(states.data(), layers, n_head_kv, cap, ring));
            if (c == nullptr || fa_tq_cache_set_window(c.get(), window) != FA_TQ_OK) {
                refuse(fa_tq_last_error());
            }
            fa_tq_cache_set_parallel_for(c.get(), &llama_tq_team::parallel_for, &team);
        }
        return c;
    };
    for (auto & s : seqs) {
        s.full = make(n_full, cap_linear, false, 0);
        s.swa = make(n_ring, has_ring ? cap_ring : cap_linear, has_ring, probe ? 0 : int(n_swa));
        s.capacity = cap_linear;
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
    const std::string swa_text = !swa_apart ? ""
                                 : has_ring ? ", sliding-window layers in rings of " + std::to_string(n_swa) + " + " +
                                                  std::to_string(ring_cap - int(n_swa))
                                            : ", sliding-window layers of " + std::to_string(n_swa) + " in full";
    LLAMA_LOG_INFO("%s: size = %7.2f MiB (%6u cells%s, %3d layers, %2u seqs%s), K (%s), V (%s): %.1f bytes/token all in\n",
                   __func__, double(total) / (1024.0 * 1024.0), pool > 0 ? pool : n_ctx_seq,
                   pool > 0 ? " shared" : " per seq", n_layer, n_seq_max, swa_text.c_str(),
                   llama_tq_type_name(params.type_k), llama_tq_type_name(params.type_v), per_token);
}

// --- hooks -------------------------------------------------------------------------

llama_memory_i * llama_tq_memory_create(const llama_model & model, const llama_memory_params & params,
                                        const llama_cparams & cparams) {
    // The tq memory takes the place of llama.cpp's plain KV cache (llama_kv_cache, or
    // llama_kv_cache_iswa with sliding-window layers), whatever the architecture: which
    // memory llama.cpp gives this model is asked of create_memory itself, with f16
    // types, a context of at most 256 positions and its log silenced (what is
    // allocated is freed at once).  A model with no KV memory gets none, as with any
    // cache type; any other memory is refused with its kind.
    llama_memory_params f16 = params;
    f16.type_k = f16.type_v = GGML_TYPE_F16;
    llama_cparams small = cparams;
    small.n_ctx = std::min(cparams.n_ctx, 256u);
    small.n_ctx_seq = std::min(cparams.n_ctx_seq, small.n_ctx);
    ggml_log_callback log_cb = nullptr;
    void * log_data = nullptr;
    llama_log_get(&log_cb, &log_data);
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    std::unique_ptr<llama_memory_i> plain;
    try {
        plain.reset(model.create_memory(f16, small));
    } catch (...) {
        llama_log_set(log_cb, log_data);
        throw;
    }
    llama_log_set(log_cb, log_data);
    if (plain == nullptr) {
        return nullptr;
    }
    const llama_memory_i & m = *plain;
    if (typeid(m) != typeid(llama_kv_cache) && typeid(m) != typeid(llama_kv_cache_iswa)) {
        const std::string kind = dynamic_cast<const llama_memory_recurrent *>(&m) ? "recurrent state"
                                 : dynamic_cast<const llama_memory_hybrid *>(&m) ||
                                           dynamic_cast<const llama_memory_hybrid_iswa *>(&m)
                                     ? "attention and recurrent layers (a hybrid memory)"
                                     : "a KV cache of its own";
        llama_tq_memory::refuse(std::string("architecture '") + llm_arch_name(model.arch) + "' keeps " + kind +
                                ", not llama.cpp's plain KV cache, which the tq cache replaces");
    }
    plain.reset();
    return new llama_tq_memory(model, params, cparams);
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
