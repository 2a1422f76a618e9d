// 16 floats as one GCC vector, compiled for each ISA by function multiversioning:
// a function marked LLAMA_TARGET_CLONES is built for AVX-512, AVX2+FMA and baseline
// x86-64, and the loader picks the one this CPU runs (one binary for every machine).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LLAMA_MULTIVERSION 1  // functions may have one version per ISA (matmul.cpp's are written out)
#define LLAMA_TARGET_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LLAMA_TARGET_CLONES
#endif

namespace llama {
using v16 = float __attribute__((vector_size(64)));
}  // namespace llama
