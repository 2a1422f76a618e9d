// tq: the TurboQuant command-line tool.
#include "commands.hpp"

#include <cstdio>
#include <cstring>

namespace {
constexpr const char* kUsage =
    "usage: tq <command> [options]\n"
    "commands:\n"
    "  demo    compress random vectors with every compiled variant and print the figures\n"
    "run `tq <command> --help` for a command's options\n";
}

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!std::strcmp(argv[1], "demo")) return tq::cli::demo(argc - 1, argv + 1);
    std::fprintf(stderr, "tq: unknown command '%s'\n%s", argv[1], kUsage);
    return 2;
}
