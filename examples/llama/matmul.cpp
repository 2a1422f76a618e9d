#include "matmul.hpp"

#include <algorithm>
#include <cstring>

#include "vector.hpp"

namespace llama {
namespace {

using v4 = float __attribute__((vector_size(16)));
using v8 = float __attribute__((vector_size(32)));

// The sum of a vector's floats by halves (fewer dependent adds than one at a time).
[[gnu::always_inline]] inline float sum(const v4& v) { return (v[0] + v[2]) + (v[1] + v[3]); }
#ifdef LLAMA_MULTIVERSION  // wider vectors only in the x86 versions below
[[gnu::always_inline]] inline float sum(const v8& v) {
    return sum(__builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7));
}
[[gnu::always_inline]] inline float sum(const v16& v) {
    return sum(__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
               __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
}
#endif

// A TR × NR tile of y: TR rows of x against NR rows of w, one vector V of k at a time.
template <class V, int TR, int NR>
[[gnu::always_inline]] inline void tile(const float* x, int k, const float* w, float* y, int ldy) {
    constexpr int L = sizeof(V) / sizeof(float);
    V acc[TR][NR] = {};
    for (int i = 0; i < k; i += L) {
        V wv[NR];
        for (int n = 0; n < NR; ++n) {
            V v;  // through a local: GCC copies a memcpy straight into wv[n] via the stack
            std::memcpy(&v, w + static_cast<long>(n) * k + i, sizeof(V));
            wv[n] = v;
        }
        for (int t = 0; t < TR; ++t) {
            V xv;
            std::memcpy(&xv, x + static_cast<long>(t) * k + i, sizeof(V));
            for (int n = 0; n < NR; ++n) acc[t][n] += xv * wv[n];
        }
    }
    for (int t = 0; t < TR; ++t)
        for (int n = 0; n < NR; ++n) y[static_cast<long>(t) * ldy + n] = sum(acc[t][n]);
}

// The tile for tr ≤ TR rows and nr ≤ NR columns (smaller only at the edges).
template <class V, int TR, int NR>
[[gnu::always_inline]] inline void edge_tile(int tr, int nr, const float* x, int k, const float* w, float* y, int ldy) {
    if constexpr (TR > 1)
        if (tr < TR) return edge_tile<V, TR - 1, NR>(tr, nr, x, k, w, y, ldy);
    if constexpr (NR > 1)
        if (nr < NR) return edge_tile<V, TR, NR - 1>(tr, nr, x, k, w, y, ldy);
    tile<V, TR, NR>(x, k, w, y, ldy);
}

// Columns [c0, c1) of y in TR × NR tiles.  Rows go in chunks of 64, whose x stays in
// L2 while the chunk's pass streams w; within a chunk, NR columns of w stay in L1 over all rows.
template <class V, int TR, int NR>
[[gnu::always_inline]] inline void columns(const float* x, int rows, int k, const float* w, int c0, int c1, float* y,
                                           int ldy) {
    for (int r0 = 0; r0 < rows; r0 += 64) {
        int r1 = std::min(rows, r0 + 64);
        for (int c = c0; c < c1; c += NR) {
            int nr = std::min(NR, c1 - c);
            const float* wc = w + static_cast<long>(c) * k;
            for (int r = r0; r < r1; r += TR)
                edge_tile<V, TR, NR>(std::min(TR, r1 - r), nr, x + static_cast<long>(r) * k, k, wc,
                                     y + static_cast<long>(r) * ldy + c, ldy);
        }
    }
}

// One version per ISA, picked once by the loader (GCC function multiversioning), each
// with a tile whose accumulators plus the NR vectors of w and the one of x it loads fit
// the vector registers: 4 × 4 of 16 floats for AVX-512 (32 zmm), 4 × 3 of 8 for AVX2
// (16 ymm), 4 × 3 of 4 otherwise (baseline x86's 16 xmm, NEON, or any other ISA).
#ifdef LLAMA_MULTIVERSION
[[gnu::target("arch=x86-64-v4")]] void matmul_columns(const float* x, int rows, int k, const float* w, int c0, int c1,
                                                      float* y, int ldy) {
    columns<v16, 4, 4>(x, rows, k, w, c0, c1, y, ldy);
}
[[gnu::target("arch=x86-64-v3")]] void matmul_columns(const float* x, int rows, int k, const float* w, int c0, int c1,
                                                      float* y, int ldy) {
    columns<v8, 4, 3>(x, rows, k, w, c0, c1, y, ldy);
}
[[gnu::target("default")]]
#endif
void matmul_columns(const float* x, int rows, int k, const float* w, int c0, int c1, float* y, int ldy) {
    columns<v4, 4, 3>(x, rows, k, w, c0, c1, y, ldy);
}

}  // namespace

void matmul(ThreadPool& pool, const float* x, int rows, int k, const float* w, int cols, float* y) {
    int threads = pool.size();
    int per = ((cols + 11) / 12 + threads - 1) / threads * 12;  // whole tiles per thread (of 3 or 4 columns)
    pool.run([&](int i) {
        int c0 = std::min(cols, i * per), c1 = std::min(cols, c0 + per);
        if (c0 < c1) matmul_columns(x, rows, k, w, c0, c1, y, cols);
    });
}

}  // namespace llama
