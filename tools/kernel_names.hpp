// Names of the generated kernels and the files that define them, as the generator
// writes them (generator/variants.py): tq_score_d128_b3_5__avx512 is in
// avx512/score-d128-b3.5-avx512.cpp.
#pragma once

#include <optional>
#include <string>

namespace tq::cli {

struct KernelRef {
    std::string kernel;    // rotate, unrotate, encode, decode, score, accumulate, pack, unpack
    int head_dim = 0;
    int rate_eighths = 0;  // 0 for rotate and unrotate
    std::string isa;
};

// Every kernel family, per head dim (rotate, unrotate) or per (head dim, bit rate).
inline constexpr const char* kRotationKernels[] = {"rotate", "unrotate"};
inline constexpr const char* kBitKernels[] = {"encode", "decode", "score", "accumulate", "pack", "unpack"};

std::string kernel_name(const KernelRef& k);
// The generated file (relative to a generated/ folder) that defines k.
std::string kernel_file(const KernelRef& k);
// The reverse of kernel_name; nullopt if `name` is not one.
std::optional<KernelRef> parse_kernel_name(const std::string& name);

}  // namespace tq::cli
