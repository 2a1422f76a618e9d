// tq: the TurboQuant command-line tool.
#include "commands.hpp"

#include "turboquant/registry.h"

#include <cstdio>
#include <cstring>

namespace {
constexpr const char* kUsage =
    "usage: tq <command> [options]\n"
    "commands:\n"
    "  demo      a KV cache from synthetic activations: bytes, fidelity and speed vs FP32\n"
    "  list      every compiled kernel, and the ISA picked on this CPU\n"
    "  codebook  the Lloyd-Max codebook of a head dim and bit width\n"
    "  show      the generated source of one kernel\n"
    "  bench     ns per call of every variant and ISA, next to the baselines\n"
    "  eval      fidelity on your own activations (.npy keys, values, queries)\n"
    "run `tq <command> --help` for a command's options\n";
}

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!tq_max_isa()) {  // an invalid TQ_MAX_ISA: refuse rather than run uncapped
        std::fprintf(stderr, "tq: %s\n", tq_last_error());
        return 2;
    }
    if (!std::strcmp(argv[1], "demo")) return tq::cli::demo(argc - 1, argv + 1);
    if (!std::strcmp(argv[1], "list")) return tq::cli::list(argc - 1, argv + 1);
    if (!std::strcmp(argv[1], "codebook")) return tq::cli::codebook(argc - 1, argv + 1);
    if (!std::strcmp(argv[1], "show")) return tq::cli::show(argc - 1, argv + 1);
    if (!std::strcmp(argv[1], "eval")) return tq::cli::eval(argc - 1, argv + 1);
    if (!std::strcmp(argv[1], "bench")) return tq::cli::bench(argc - 1, argv + 1);
    std::fprintf(stderr, "tq: unknown command '%s'\n%s", argv[1], kUsage);
    return 2;
}
