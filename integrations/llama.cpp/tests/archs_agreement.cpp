// One model (a GGUF of llama.cpp's test-llama-archs -o: random weights, no tokenizer)
// through the cache types named on the command line, against the f16 cache:
//
//   tq-archs-agreement MODEL TYPE...
//
// Each type's context (-fa on, 2 threads, 256 positions) decodes the same random tokens:
// a prompt of 48 in one batch, then 16 one at a time; then, where f16's memory can
// shift (llama_memory_can_shift), a context shift as llama-server's (positions 8..23
// removed, the rest moved down by 16) and 8 more one at a time.  Where a tq cache
// cannot (M-RoPE), it is asked to shift all the same and must refuse, its positions
// unchanged.
// Prints one line per type:
//   TYPE ok KL MEAN TOP1 SHARE      (mean KL of the single-token logits from f16's,
//                                    and the share with f16's top token)
//   TYPE refused REASON             (no context: the last "KV cache" line llama.cpp logged)
//   TYPE failed REASON              (a decode failed)
// llamacpp_test.py archs runs it once per model (a crash then costs one model only).
#include "llama-tq.h"
#include "llama.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int k_single = 16;                 // tokens one at a time before the shift
constexpr int k_shift_at = 8, k_shift = 16;  // the shift removes positions [8, 24)
constexpr int k_after = 8;                   // tokens one at a time after it

std::string last_error;  // the last error line llama.cpp logged

void keep_errors(ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) {
        std::string line(text);
        while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) {
            line.pop_back();
        }
        if (!line.empty()) {
            last_error = line;
        }
    }
}

ggml_type type_of(const std::string & name) {
    if (name == "f16") {
        return GGML_TYPE_F16;
    }
    if (name == "q4_0") {
        return GGML_TYPE_Q4_0;
    }
    if (name == "q8_0") {
        return GGML_TYPE_Q8_0;
    }
    return llama_tq_type_from_name(name.c_str());
}

// The logits after each of the single tokens, or the reason there are none.  shifted:
// whether f16's context shifted (set by f16's run, which shifts where its memory can;
// every other type then shifts exactly where f16 did, so that the logits compare).
bool run(llama_model * model, ggml_type type, const std::vector<llama_token> & tokens, int n_prompt,
         std::vector<std::vector<float>> & logits, std::string & why, bool & refused, bool & shifted) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = cp.n_ubatch = 64;
    cp.n_threads = cp.n_threads_batch = 2;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
    cp.type_k = cp.type_v = type;
    last_error.clear();
    llama_context * ctx = llama_init_from_model(model, cp);
    if (ctx == nullptr) {
        refused = true;
        why = last_error;
        return false;
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    llama_batch batch = llama_batch_init(n_prompt, 0, 1);
    llama_memory_t mem = llama_get_memory(ctx);
    bool ok = true;
    int shift = 0;  // the positions moved down so far
    for (int i = 0; ok && i < int(tokens.size());) {
        // (Not of recurrent or hybrid memories, which the tq cache refuses: llama.cpp's own
        // hybrid memory aborts in the decode after such a shift.)
        const bool reference = type == GGML_TYPE_F16;
        if (i == n_prompt + k_single && mem != nullptr && !llama_model_is_recurrent(model) &&
            !llama_model_is_hybrid(model)) {
            if (reference) {
                shifted = llama_memory_can_shift(mem);
            }
            if (shifted && !llama_memory_can_shift(mem)) {
                why = "the memory cannot shift where f16's can";
                ok = false;
                break;
            }
            if (shifted) {
                llama_memory_seq_rm(mem, 0, k_shift_at, k_shift_at + k_shift);
                llama_memory_seq_add(mem, 0, k_shift_at + k_shift, -1, -k_shift);
                shift = k_shift;
            } else if (llama_tq_is_type(type) && !llama_memory_can_shift(mem)) {
                const llama_pos before = llama_memory_seq_pos_max(mem, 0);
                last_error.clear();
                llama_memory_seq_add(mem, 0, k_shift_at + k_shift, -1, -k_shift);
                if (llama_memory_seq_pos_max(mem, 0) != before || last_error.find("tq KV cache") == std::string::npos) {
                    why = "a shift of a memory that cannot shift was not refused: " + last_error;
                    ok = false;
                    break;
                }
            }
        }
        const int n = i == 0 ? n_prompt : 1;
        batch.n_tokens = n;
        for (int j = 0; j < n; ++j) {
            batch.token[j] = tokens[size_t(i + j)];
            batch.pos[j] = i + j - shift;
            batch.n_seq_id[j] = 1;
            batch.seq_id[j][0] = 0;
            batch.logits[j] = j == n - 1;
        }
        if (llama_decode(ctx, batch) != 0) {
            why = "llama_decode failed at token " + std::to_string(i) + ": " + last_error;
            ok = false;
            break;
        }
        i += n;
        if (n == 1) {
            const float * l = llama_get_logits_ith(ctx, -1);
            logits.emplace_back(l, l + n_vocab);
        }
    }
    llama_batch_free(batch);
    llama_free(ctx);
    return ok;
}

std::vector<double> softmax(const std::vector<float> & l) {
    const float top = *std::max_element(l.begin(), l.end());
    std::vector<double> p(l.size());
    double sum = 0;
    for (size_t i = 0; i < l.size(); ++i) {
        sum += p[i] = std::exp(double(l[i] - top));
    }
    for (double & x : p) {
        x /= sum;
    }
    return p;
}

}  // namespace

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL TYPE...\n", argv[0]);
        return 2;
    }
    llama_log_set(keep_errors, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (model == nullptr) {
        printf("model failed %s\n", last_error.c_str());
        return 1;
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model)), n_prompt = 48;
    std::mt19937 gen(1234);
    std::uniform_int_distribution<llama_token> pick(0, n_vocab - 1);
    std::vector<llama_token> tokens(n_prompt + k_single + k_after);
    for (llama_token & t : tokens) {
        t = pick(gen);
    }
    std::vector<std::vector<float>> reference;
    std::string why;
    bool refused = false;
    bool shifted = false;
    if (!run(model, GGML_TYPE_F16, tokens, n_prompt, reference, why, refused, shifted)) {
        printf("f16 %s %s\n", refused ? "refused" : "failed", why.c_str());
        llama_model_free(model);
        return 0;
    }
    for (int a = 2; a < argc; ++a) {
        const ggml_type type = type_of(argv[a]);
        if (type == GGML_TYPE_COUNT) {
            fprintf(stderr, "unknown cache type %s\n", argv[a]);
            return 2;
        }
        std::vector<std::vector<float>> logits;
        refused = false;
        if (!run(model, type, tokens, n_prompt, logits, why, refused, shifted)) {
            printf("%s %s %s\n", argv[a], refused ? "refused" : "failed", why.c_str());
            fflush(stdout);
            continue;
        }
        double kl = 0;
        int same = 0;
        for (size_t t = 0; t < reference.size(); ++t) {
            const std::vector<double> p = softmax(reference[t]), q = softmax(logits[t]);
            for (size_t i = 0; i < p.size(); ++i) {
                kl += p[i] > 0 ? p[i] * (std::log(p[i]) - std::log(std::max(q[i], 1e-300))) : 0.0;
            }
            same += std::max_element(p.begin(), p.end()) - p.begin() == std::max_element(q.begin(), q.end()) - q.begin();
        }
        printf("%s ok %.6g %.4f\n", argv[a], kl / double(reference.size()), double(same) / double(reference.size()));
        fflush(stdout);  // kept if a later type aborts (llama.cpp's own shift of MLA's quantized cache does)
    }
    llama_model_free(model);
    return 0;
}
