// `tq codebook`: the Lloyd-Max codebook of any (head dim, bits), computed here
// (the same solver as tq-codebook, which the build runs).
#include "args.hpp"
#include "commands.hpp"

#include "lloyd_max.hpp"

#include <cstdio>
#include <stdexcept>

namespace tq::cli {
namespace {

constexpr const char* kUsage =
    "usage: tq codebook --head-dim D --bits B [--json]\n"
    "  Centroids, decision boundaries and theoretical MSE (per coordinate, and E|u - u_hat|^2 for a\n"
    "  random unit vector) of the Lloyd-Max quantizer for one rotated coordinate at head dim D\n"
    "  (8..1024) and B bits (1..8).\n";

}  // namespace

int codebook(int argc, char** argv) {
    const Args args("codebook", kUsage, argc, argv, {"--head-dim", "--bits"}, {"--json"});
    if (!args.has("--head-dim") || !args.has("--bits")) args.fail("--head-dim and --bits are required");
    const int d = args.integer("--head-dim", 0, 8, 1024), bits = args.integer("--bits", 0, 1, 8);
    try {
        const auto cb = tq::lloyd_max::solve_lloyd_max(d, bits);
        std::fputs((args.flag("--json") ? tq::lloyd_max::to_json(cb) : tq::lloyd_max::to_text(cb)).c_str(), stdout);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tq codebook: %s\n", e.what());
        return 1;
    }
    return 0;
}

}  // namespace tq::cli
