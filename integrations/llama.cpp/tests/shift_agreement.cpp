// Teacher-forced decoding through context shifts: the tokens of a text (-f) go in one
// at a time; whenever the context (-c) is full, half of what follows the first token
// is removed and the rest shifted down, as llama-server's --context-shift does
// (llama_memory_seq_rm, then llama_memory_seq_add).  Prints the top token after each
// input token, one per line: llamacpp_test.py shift compares the cache types' lists.
#include "arg.h"
#include "common.h"
#include "llama.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

int main(int argc, char ** argv) {
    common_params params;
    params.n_ctx = 256;
    params.n_predict = 512;
    if (!common_params_parse(argc, argv, params, LLAMA_EXAMPLE_COMMON)) {
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
    for (int i = 0; i < n_total; ++i) {
        if (n_past + 1 > n_ctx) {
            const int n_discard = (n_past - n_keep) / 2;
            llama_memory_seq_rm(mem, 0, n_keep, n_keep + n_discard);
            llama_memory_seq_add(mem, 0, n_keep + n_discard, n_past, -n_discard);
            n_past -= n_discard;
        }
        llama_token token = tokens[size_t(i)];  // at the sequence's next position, n_past
        if (llama_decode(ctx, llama_batch_get_one(&token, 1)) != 0) {
            fprintf(stderr, "shift_agreement: llama_decode failed at token %d\n", i);
            return 1;
        }
        ++n_past;
        const float * logits = llama_get_logits_ith(ctx, -1);
        printf("%d\n", int(std::max_element(logits, logits + n_vocab) - logits));
    }
    return 0;
}
