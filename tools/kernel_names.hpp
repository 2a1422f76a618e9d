// The generated kernels of this build, as the generator lists them (kernels.inc):
// name, kind, head dim, rate, ISA and the file that defines each.
#pragma once

#include <span>
#include <string_view>

namespace tq::cli {

struct KernelRef {
    const char* kernel;  // rotate, unrotate, encode, decode, score, accumulate, pack, unpack
    int head_dim;
    int rate_eighths;    // 0 for rotate and unrotate
    const char* isa;
    const char* name;    // tq_score_d128_b3_5__avx512
    const char* file;    // avx512/score-d128-b3_5-avx512.cpp, relative to a generated/ folder
};

// Every kernel compiled into this build, in the generator's order.
std::span<const KernelRef> compiled_kernels();
// The kernel called `name`; nullptr if this build has none.
const KernelRef* find_kernel(std::string_view name);

}  // namespace tq::cli
