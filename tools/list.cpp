// `tq list`: every compiled kernel (kernel, head dim, bits, ISA) and which ISA the
// registry picks on this CPU.
#include "args.hpp"
#include "commands.hpp"
#include "kernel_names.hpp"

#include "isas.hpp"
#include "turboquant/registry.hpp"

#include <cstdio>
#include <string>

namespace tq::cli {
namespace {

constexpr const char* kUsage =
    "usage: tq list [--json]\n"
    "  Lists every kernel compiled into this build (name, kernel, head dim, bits, ISA) and marks\n"
    "  the ISA the registry picks on this CPU (TQ_ISA=<isa> overrides it; TQ_MAX_ISA=<isa> makes\n"
    "  every ISA above it count as not run here).  ISAs, best first: " TQ_ISA_NAMES ".\n";
constexpr const char* kIsas[] = {TQ_ISA_NAME_LIST};  // best first

}  // namespace

int list(int argc, char** argv) {
    const Args args("list", kUsage, argc, argv, {}, {"--json"});
    const std::string picked = tq_active_isa(), cap = tq_max_isa();
    const auto kernels = compiled_kernels();

    if (args.flag("--json")) {
        std::printf("{\n  \"picked_isa\": %s,\n  \"max_isa\": %s,\n  \"isas\": [", json_string(picked).c_str(),
                    json_string(cap).c_str());
        bool first = true;
        for (const char* isa : kIsas) {
            std::printf("%s\n    {\"name\": %s, \"compiled\": %s, \"runs_here\": %s}", first ? "" : ",",
                        json_string(isa).c_str(), tq_isa_compiled(isa) ? "true" : "false",
                        tq_isa_available(isa) ? "true" : "false");
            first = false;
        }
        std::printf("\n  ],\n  \"kernels\": [");
        first = true;
        for (const auto& k : kernels) {
            char bits[16] = "null", dim[16] = "null";  // null: any (a product serves every head dim)
            if (k.rate_eighths) std::snprintf(bits, sizeof bits, "%g", k.rate_eighths / 8.0);
            if (k.head_dim) std::snprintf(dim, sizeof dim, "%d", k.head_dim);
            std::printf("%s\n    {\"name\": %s, \"kernel\": %s, \"head_dim\": %s, \"bits\": %s, \"isa\": %s, "
                        "\"picked\": %s, \"file\": %s}",
                        first ? "" : ",", json_string(k.name).c_str(), json_string(k.kernel).c_str(),
                        dim, bits,
                        json_string(k.isa).c_str(), k.isa == picked ? "true" : "false",
                        json_string(k.file).c_str());
            first = false;
        }
        std::printf("\n  ]\n}\n");
        return 0;
    }
    std::printf("ISAs:");
    for (const char* isa : kIsas)
        std::printf("  %s (%s%s)", isa, tq_isa_compiled(isa) ? "compiled" : "not compiled",
                    tq_isa_compiled(isa) ? (tq_isa_available(isa) ? ", runs here" : ", not run here") : "");
    if (cap != kIsas[0]) std::printf("\nTQ_MAX_ISA=%s: no ISA above it counts as run here", cap.c_str());
    std::printf("\npicked on this CPU: %s (marked *)\n\n%-34s %-14s %8s %5s %-7s\n", picked.c_str(), "name",
                "kernel", "head_dim", "bits", "isa");
    for (const auto& k : kernels) {
        char bits[16] = "-", dim[16] = "any";
        if (k.rate_eighths) std::snprintf(bits, sizeof bits, "%g", k.rate_eighths / 8.0);
        if (k.head_dim) std::snprintf(dim, sizeof dim, "%d", k.head_dim);
        std::printf("%-34s %-14s %8s %5s %-7s%s\n", k.name, k.kernel, dim, bits, k.isa, k.isa == picked ? " *" : "");
    }
    return 0;
}

}  // namespace tq::cli
