// The test runner: doctest, plus `--tq-isa=NAME` to run every test on one ISA's
// kernels.  CTest registers the suite once per ISA; on a CPU (or build) without
// that ISA the run exits 77, which CTest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "turboquant/registry.h"

#include <cstdio>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
    constexpr int kSkipped = 77;
    std::vector<char*> args;
    const char* isa = nullptr;
    bool listing = false;
    for (int i = 0; i < argc; ++i) {
        if (std::strncmp(argv[i], "--tq-isa=", 9) == 0) {
            isa = argv[i] + 9;
            continue;
        }
        listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
        args.push_back(argv[i]);
    }
    if (isa && !listing && tq_set_isa(isa) != TQ_OK) {
        std::printf("skipped: %s\n", tq_last_error());
        return kSkipped;
    }
    doctest::Context context(int(args.size()), args.data());
    return context.run();
}
