// `tq show`: the generated source of one kernel, banner first (template, the
// generator command that reproduces it, operation count).
#include "args.hpp"
#include "commands.hpp"
#include "kernel_names.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace tq::cli {
namespace {

constexpr const char* kUsage =
    "usage: tq show KERNEL [--dir GENERATED_DIR]\n"
    "  Prints the generated source that defines KERNEL (a name from `tq list`, e.g.\n"
    "  tq_score_d128_b4__avx512). --dir: a generated/ folder (default: this build's, "
    TQ_GENERATED_DIR ").\n";

}  // namespace

int show(int argc, char** argv) {
    const Args args("show", kUsage, argc, argv, {"--dir"}, {}, 1);
    if (args.positionals().empty()) args.fail("which kernel? (names: tq list)");
    const std::string name = args.positionals()[0];
    const KernelRef* ref = find_kernel(name);
    if (!ref) {
        std::fprintf(stderr, "tq show: %s is not compiled into this build (names: tq list)\n", name.c_str());
        return 1;
    }
    const std::string path = args.value("--dir", TQ_GENERATED_DIR) + "/" + ref->file;
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "tq show: %s is not in %s (not compiled into this build? see tq list)\n", name.c_str(),
                     path.c_str());
        return 1;
    }
    std::cout << in.rdbuf();
    return 0;
}

}  // namespace tq::cli
