// `tq list`: every compiled kernel (kernel, head dim, bits, ISA) and which ISA the
// registry picks on this CPU.
#include "args.hpp"
#include "commands.hpp"
#include "kernel_names.hpp"

#include "turboquant/registry.hpp"

#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace tq::cli {
namespace {

constexpr const char* kUsage =
    "usage: tq list [--json]\n"
    "  Lists every kernel compiled into this build (name, kernel, head dim, bits, ISA) and marks\n"
    "  the ISA the registry picks on this CPU (TQ_ISA=scalar|avx2|avx512 overrides it;\n"
    "  TQ_MAX_ISA=scalar|avx2 makes every ISA above it count as not run here).\n";
constexpr const char* kIsas[] = {"avx512", "avx2", "scalar"};

}  // namespace

int list(int argc, char** argv) {
    const Args args("list", kUsage, argc, argv, {}, {"--json"});
    const std::string picked = tq_active_isa(), cap = tq_max_isa();
    std::set<int> dims;
    for (const auto& v : variants()) dims.insert(v.head_dim);

    std::vector<KernelRef> kernels;
    for (const char* isa : kIsas) {
        if (!tq_isa_compiled(isa)) continue;
        for (int d : dims)
            for (const char* k : kRotationKernels) kernels.push_back({k, d, 0, isa});
        for (const auto& v : variants())
            for (const char* k : kBitKernels)
                if (std::string(isa) == "scalar" || (std::string(k) != "pack" && std::string(k) != "unpack"))
                    kernels.push_back({k, v.head_dim, v.rate_eighths, isa});
    }

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
            char bits[16] = "null";
            if (k.rate_eighths) std::snprintf(bits, sizeof bits, "%g", k.rate_eighths / 8.0);
            std::printf("%s\n    {\"name\": %s, \"kernel\": %s, \"head_dim\": %d, \"bits\": %s, \"isa\": %s, "
                        "\"picked\": %s, \"file\": %s}",
                        first ? "" : ",", json_string(kernel_name(k)).c_str(), json_string(k.kernel).c_str(),
                        k.head_dim, bits,
                        json_string(k.isa).c_str(), k.isa == picked ? "true" : "false",
                        json_string(kernel_file(k)).c_str());
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
    std::printf("\npicked on this CPU: %s (marked *)\n\n%-34s %-10s %8s %5s %-7s\n", picked.c_str(), "name",
                "kernel", "head_dim", "bits", "isa");
    for (const auto& k : kernels) {
        char bits[16] = "-";
        if (k.rate_eighths) std::snprintf(bits, sizeof bits, "%g", k.rate_eighths / 8.0);
        std::printf("%-34s %-10s %8d %5s %-7s%s\n", kernel_name(k).c_str(), k.kernel.c_str(), k.head_dim, bits,
                    k.isa.c_str(), k.isa == picked ? " *" : "");
    }
    return 0;
}

}  // namespace tq::cli
