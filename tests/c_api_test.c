/* The C API from C: compiled as C11, it quantizes a small cache, runs
 * attention, decodes, and takes one error path. */
#include "turboquant/registry.h"
#include "turboquant/turboquant.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define HEADS 2
#define MAX_SEQ 16

static int failed = 0;
#define EXPECT(cond)                                              \
    do {                                                          \
        if (!(cond)) {                                            \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
            failed = 1;                                           \
        }                                                         \
    } while (0)

int main(void) {
    const tq_bit_kernels* first = tq_variant(0);
    EXPECT(first != NULL);
    const int d = first->head_dim;
    const float rate = (float)first->rate_eighths / 8; /* bits per coordinate: 3.5 for 28 */
    fa_tq_config config = {rate, rate};               /* scale 0: the default */
    fa_tq_state* state = fa_tq_init(d, config, 42);
    EXPECT(state != NULL);
    fa_tq_cache* cache = fa_tq_cache_new(state, 1, HEADS, MAX_SEQ);
    EXPECT(cache != NULL);

    float k[HEADS * 1024], v[HEADS * 1024], q[2 * HEADS * 1024], out[2 * HEADS * 1024];
    for (int pos = 0; pos < 10; ++pos) {
        for (int i = 0; i < HEADS * d; ++i) {
            k[i] = sinf((float)(i + 3 * pos));
            v[i] = cosf((float)(2 * i + pos));
        }
        for (int i = 0; i < 2 * HEADS * d; ++i) q[i] = sinf((float)i * 0.1f);
        EXPECT(fa_tq_attention(state, cache, 0, pos, q, 2 * HEADS, k, v, 0.0f, out) == FA_TQ_OK);
    }
    EXPECT(fa_tq_cache_seq_len(cache) == 10);
    for (int i = 0; i < 2 * HEADS * d; ++i) EXPECT(isfinite(out[i]));

    float decoded[HEADS * 1024];
    EXPECT(fa_tq_dequantize(state, cache, 0, 9, 1, true, decoded) == decoded);
    double err = 0, norm = 0;
    for (int i = 0; i < HEADS * d; ++i) {
        err += (decoded[i] - k[i]) * (decoded[i] - k[i]);
        norm += k[i] * k[i];
    }
    EXPECT(err / norm < 4 * first->mse_unit_vector);

    size_t per_token = 0;
    EXPECT(fa_tq_cache_bytes(cache, &per_token, NULL) == FA_TQ_OK);
    EXPECT(per_token == (size_t)HEADS * 2 * (first->code_bytes + 2)); /* half-float scales */

    EXPECT(fa_tq_quantize(state, cache, 3, 0, k, true) == TQ_ERROR_INVALID_ARGUMENT);
    EXPECT(strstr(fa_tq_last_error(), "layer 3") != NULL);

    fa_tq_cache_free(cache);
    fa_tq_free(state);

    /* The zero config is K4/V2 with every default, where this build has it. */
    const tq_kernels* k4v2 = NULL;
    const fa_tq_config defaults = fa_tq_config_default();
    EXPECT(defaults.key_bits == 4 && defaults.value_bits == 2);
    if (tq_find(d, 4, 2, &k4v2) == TQ_OK) {
        fa_tq_state* zero = fa_tq_init(d, (fa_tq_config){0}, 42);
        EXPECT(zero != NULL);
        fa_tq_cache* c = fa_tq_cache_new(zero, 1, HEADS, MAX_SEQ);
        EXPECT(c != NULL);
        EXPECT(fa_tq_cache_bytes(c, &per_token, NULL) == FA_TQ_OK);
        EXPECT(per_token == (size_t)HEADS * (k4v2->key->code_bytes + k4v2->value->code_bytes + 4));
        fa_tq_cache_free(c);
        fa_tq_free(zero);
    }
    printf("%s: C API test\n", failed ? "FAILED" : "ok");
    return failed;
}
