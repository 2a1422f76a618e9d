/* The C consumer: only turboquant/turboquant.h, linked as a C program against the
 * installed library (pkg-config).  Quantizes a few tokens, attends, dequantizes. */
#include "turboquant/turboquant.h"

#include <math.h>
#include <stdio.h>

#ifndef TQ_CONSUMER_HEAD_DIM
#error "define TQ_CONSUMER_HEAD_DIM, TQ_CONSUMER_KEY_BITS and TQ_CONSUMER_VALUE_BITS"
#endif
#define D TQ_CONSUMER_HEAD_DIM
#define HEADS 2
#define N 16

int main(void) {
    fa_tq_config config = {TQ_CONSUMER_KEY_BITS, TQ_CONSUMER_VALUE_BITS, FA_TQ_SCALE_DEFAULT};
    fa_tq_state* state = fa_tq_init(D, config, 3);
    if (!state) {
        fprintf(stderr, "fa_tq_init: %s\n", fa_tq_last_error());
        return 1;
    }
    fa_tq_cache* cache = fa_tq_cache_new(state, 1, HEADS, N);
    static float k[HEADS * D], v[HEADS * D], q[HEADS * D], out[HEADS * D], back[HEADS * D];
    int rc = cache ? fa_tq_cache_set_threads(cache, 2) : 1; /* the attention pool links from C too */
    for (int pos = 0; pos < N && rc == FA_TQ_OK; ++pos) {
        for (int i = 0; i < HEADS * D; ++i) {
            k[i] = sinf(0.1f * (float)(i + 7 * pos));
            v[i] = cosf(0.2f * (float)(i + 3 * pos));
            q[i] = sinf(0.05f * (float)i);
        }
        rc = fa_tq_attention(state, cache, 0, pos, q, HEADS, k, v, 0.0f, out);
    }
    if (rc == FA_TQ_OK && !fa_tq_dequantize(state, cache, 0, N - 1, 1, true, back)) rc = 1;
    double err = 0, norm = 0;
    for (int i = 0; i < HEADS * D; ++i) {
        err += (back[i] - k[i]) * (back[i] - k[i]);
        norm += k[i] * k[i];
    }
    if (rc != FA_TQ_OK) fprintf(stderr, "turboquant: %s\n", fa_tq_last_error());
    printf("C consumer: head_dim %d, last key's relative error %.4f\n", D, sqrt(err / norm));
    fa_tq_cache_free(cache);
    fa_tq_free(state);
    return rc == FA_TQ_OK && err < 0.1 * norm ? 0 : 1;
}
