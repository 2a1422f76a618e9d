// Teacher-forced decoding through context shifts: the tokens of a text (-f) go in one
// at a time; whenever the context (-c) is full, half of what follows the first token
// is removed and the rest shifted down, as llama-server's --context-shift does
// (llama_memory_seq_rm, then llama_memory_seq_add).  With --grp-attn-n N > 1 instead,
// the positions are compressed as llama-completion's self-extend does (seq_add,
// seq_div by N over --grp-attn-w positions, seq_add), and the context must hold the
// whole text.  With --copy-at N instead, after N tokens sequence 0 is copied to
// sequence 1 in two parts (llama_memory_seq_cp of positions [0, N/2), then of
// [N/2, end)) and removed, and the text goes on in sequence 1.  Prints the top token
// after each input token, one per line: llamacpp_test.py shift compares the cache
// types' lists.
#include "arg.h"
#include "common.h"
#include "llama.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

int main(int argc, char ** argv) {
    common_params params;
    params.n_ctx = 256;
    params.n_predict = 512;
    int copy_at = -1;  // ours, taken out before llama.cpp's parser sees the rest
    if (argc >= 3 && std::strcmp(argv[argc - 2], "--copy-at") == 0) {
        copy_at = std::atoi(argv[argc - 1]);
        argc -= 2;
        params.n_parallel = 2;
        params.kv_unified = true;
    }
    if (!common_params_parse(argc, argv, params, LLAMA_EXAMPLE_COMPLETION)) {
        return 1;
    }
    llama_backend_init();
    common_init_result_ptr init = common_init_from_params(params);
    llama_context * ctx = init->context();
    if (ctx == nullptr) {
        fprintf(stderr, "shift_agreement: no context\n");
        return 1;
    }
    std::ifstream in(params.prompt_file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::vector<llama_token> tokens = common_tokenize(ctx, text, true);
    const int n_total = std::min<int>(params.n_predict, int(tokens.size()));
    const int n_ctx = int(llama_n_ctx(ctx)), n_keep = 1;
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx)));
    llama_memory_t mem = llama_get_memory(ctx);
    int n_past = 0;
    const int ga_n = params.grp_attn_n, ga_w = params.grp_attn_w;
    int ga_i = 0;
    llama_seq_id seq = 0;
    llama_batch batch = llama_batch_init(1, 0, 1);
    for (int i = 0; i < n_total; ++i) {
        if (i == copy_at) {
            llama_memory_seq_cp(mem, 0, 1, -1, copy_at / 2);
            llama_memory_seq_cp(mem, 0, 1, copy_at / 2, -1);
            llama_memory_seq_rm(mem, 0, -1, -1);
            seq = 1;
        }
        while (ga_n > 1 && n_past >= ga_i + ga_w) {  // self-extend, as llama-completion
            const int ib = (ga_n * ga_i) / ga_w;
            const int bd = (ga_w / ga_n) * (ga_n - 1);
            const int dd = (ga_w / ga_n) - ib * bd - ga_w;
            llama_memory_seq_add(mem, seq, ga_i, n_past, ib * bd);
            llama_memory_seq_div(mem, seq, ga_i + ib * bd, ga_i + ib * bd + ga_w, ga_n);
            llama_memory_seq_add(mem, seq, ga_i + ib * bd + ga_w, n_past + ib * bd, dd);
            n_past -= bd;
            ga_i += ga_w / ga_n;
        }
        if (ga_n <= 1 && n_past + 1 > n_ctx) {
            const int n_discard = (n_past - n_keep) / 2;
            llama_memory_seq_rm(mem, seq, n_keep, n_keep + n_discard);
            llama_memory_seq_add(mem, seq, n_keep + n_discard, n_past, -n_discard);
            n_past -= n_discard;
        }
        // The token at the sequence's next position, n_past.
        batch.n_tokens = 1;
        batch.token[0] = tokens[size_t(i)];
        batch.pos[0] = n_past;
        batch.n_seq_id[0] = 1;
        batch.seq_id[0][0] = seq;
        batch.logits[0] = true;
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "shift_agreement: llama_decode failed at token %d\n", i);
            return 1;
        }
        ++n_past;
        const float * logits = llama_get_logits_ith(ctx, -1);
        printf("%d\n", int(std::max_element(logits, logits + n_vocab) - logits));
    }
    llama_batch_free(batch);
    return 0;
}
