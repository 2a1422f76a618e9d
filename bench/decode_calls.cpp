// tq-decode-calls: a fixed number of decode calls (fa_tq_attention) on one layer of a
// model shape, for counting instructions (valgrind --tool=callgrind), where a timed
// run on a shared machine is too noisy to see a few percent.  Run it with `calls` and
// with 0: the difference is the calls' own cost.  `split` runs the flash-decoding
// split on the calling thread (an executor that runs the tasks in order), `one-pass`
// the default one pass per KV head.  docs/benchmarks.md has the figures.
#include "bench_support.hpp"

#include "turboquant/turboquant.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

int usage(const char* why) {
    std::fprintf(stderr,
                 "tq-decode-calls: %s\n"
                 "usage: tq-decode-calls Q_HEADS KV_HEADS HEAD_DIM BITS CONTEXT CALLS one-pass|split\n",
                 why);
    return 2;
}

bool non_negative(const char* text, int& out) {
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (end == text || *end || v < 0 || v > 1 << 24) return false;
    out = int(v);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 8) return usage("seven arguments expected");
    int q_heads = 0, kv_heads = 0, d = 0, bits = 0, context = 0, calls = 0;
    if (!non_negative(argv[1], q_heads) || !non_negative(argv[2], kv_heads) || !non_negative(argv[3], d) ||
        !non_negative(argv[4], bits) || !non_negative(argv[5], context) || !non_negative(argv[6], calls) || context < 1)
        return usage("Q_HEADS, KV_HEADS, HEAD_DIM, BITS, CONTEXT (>= 1) and CALLS must be integers >= 0");
    const bool split = std::strcmp(argv[7], "split") == 0;
    if (!split && std::strcmp(argv[7], "one-pass") != 0) return usage("the last argument is one-pass or split");
    fa_tq_config config = fa_tq_config_default();
    config.key_bits = float(bits);  // keys and values; the library refuses what the build lacks
    config.value_bits = float(bits);
    fa_tq_state* state = fa_tq_init(d, config, 1);
    fa_tq_cache* cache = state ? fa_tq_cache_new(state, 1, kv_heads, context) : nullptr;
    if (!cache || (split && fa_tq_cache_set_parallel_for(cache, tq::bench::in_order, nullptr) != FA_TQ_OK)) {
        std::fprintf(stderr, "tq-decode-calls: %s\n", fa_tq_last_error());
        fa_tq_cache_free(cache);
        fa_tq_free(state);
        return 1;
    }
    std::vector<float> x(std::size_t(kv_heads) * d), q(std::size_t(q_heads) * d), out(q.size());
    for (int t = 0; t + 1 < context; ++t) {  // the default levers, filled as tq-attention-bench fills its caches
        tq::bench::fill(x, 10 + std::uint64_t(t));
        fa_tq_quantize(state, cache, 0, t, x.data(), true);
        fa_tq_quantize(state, cache, 0, t, x.data(), false);
    }
    tq::bench::fill(q, 1);
    tq::bench::fill(x, 2);
    int rc = FA_TQ_OK;
    for (int i = 0; i < calls && rc == FA_TQ_OK; ++i)  // writes the last position (again) and attends
        rc = fa_tq_attention(state, cache, 0, context - 1, q.data(), q_heads, x.data(), x.data(), 0.0f, out.data());
    if (rc != FA_TQ_OK) std::fprintf(stderr, "tq-decode-calls: %s\n", fa_tq_last_error());
    fa_tq_cache_free(cache);
    fa_tq_free(state);
    return rc == FA_TQ_OK ? 0 : 1;
}
