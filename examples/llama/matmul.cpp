#include "matmul.hpp"

#include <algorithm>
#include <cstring>

#include "vector.hpp"

namespace llama {
namespace {

// A TR × NR tile of y: TR rows of x against NR rows of w, 16 floats of k at a time.
template <int TR, int NR>
[[gnu::always_inline]] inline void tile(const float* x, int k, const float* w, float* y, int ldy) {
    v16 acc[TR][NR] = {};
    for (int i = 0; i < k; i += 16) {
        v16 xv[TR], wv[NR];
        for (int t = 0; t < TR; ++t) std::memcpy(&xv[t], x + static_cast<long>(t) * k + i, sizeof(v16));
        for (int n = 0; n < NR; ++n) std::memcpy(&wv[n], w + static_cast<long>(n) * k + i, sizeof(v16));
        for (int t = 0; t < TR; ++t)
            for (int n = 0; n < NR; ++n) acc[t][n] += xv[t] * wv[n];
    }
    for (int t = 0; t < TR; ++t)
        for (int n = 0; n < NR; ++n) {
            float s = 0;
            for (int l = 0; l < 16; ++l) s += acc[t][n][l];
            y[static_cast<long>(t) * ldy + n] = s;
        }
}

template <int TR>
[[gnu::always_inline]] inline void tile_rows(int nr, const float* x, int k, const float* w, float* y, int ldy) {
    switch (nr) {
    case 4: tile<TR, 4>(x, k, w, y, ldy); break;
    case 3: tile<TR, 3>(x, k, w, y, ldy); break;
    case 2: tile<TR, 2>(x, k, w, y, ldy); break;
    default: tile<TR, 1>(x, k, w, y, ldy); break;
    }
}

// Columns [c0, c1) of y.  Rows go in chunks of 64, whose x stays in L2 while the
// chunk's pass streams w; within a chunk, 4 columns of w stay in L1 over all rows.
LLAMA_TARGET_CLONES
void matmul_columns(const float* x, int rows, int k, const float* w, int c0, int c1, float* y, int ldy) {
    for (int r0 = 0; r0 < rows; r0 += 64) {
        int r1 = std::min(rows, r0 + 64);
        for (int c = c0; c < c1; c += 4) {
            int nr = std::min(4, c1 - c);
            const float* wc = w + static_cast<long>(c) * k;
            for (int r = r0; r < r1; r += 4) {
                const float* xr = x + static_cast<long>(r) * k;
                float* yr = y + static_cast<long>(r) * ldy + c;
                switch (std::min(4, r1 - r)) {
                case 4: tile_rows<4>(nr, xr, k, wc, yr, ldy); break;
                case 3: tile_rows<3>(nr, xr, k, wc, yr, ldy); break;
                case 2: tile_rows<2>(nr, xr, k, wc, yr, ldy); break;
                default: tile_rows<1>(nr, xr, k, wc, yr, ldy); break;
                }
            }
        }
    }
}

}  // namespace

void matmul(ThreadPool& pool, const float* x, int rows, int k, const float* w, int cols, float* y) {
    int threads = pool.size();
    int per = ((cols + 3) / 4 + threads - 1) / threads * 4;  // whole tiles per thread
    pool.run([&](int i) {
        int c0 = std::min(cols, i * per), c1 = std::min(cols, c0 + per);
        if (c0 < c1) matmul_columns(x, rows, k, w, c0, c1, y, cols);
    });
}

}  // namespace llama
