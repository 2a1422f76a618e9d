// A one-step level search for encode (docs/kernels.md, "AVX-512's level search"):
// the level of u >= 0 in a codebook symmetric about 0 (its upper half), as a table
// lookup by a grid cell and one compare, with the binary search's result exactly.
//
// The cells are [e_c, e_c+1), e_c = c / k, the last one unbounded; u's cell is
// c = min(trunc(float(u · k)), cells - 1).  level[c] is N plus the number of
// boundaries <= e_c (N: the table's size, the levels of the codebook's negative
// half, so that level[c] is e_c's level in the whole codebook of 2N) and next[c]
// the boundary after those (+inf past the last), so u's level is
// level[c] + (u >= next[c]) wherever
//   (a) each cell holds at most one boundary, and the last one none, and
//   (b) no boundary lies within e_c · 2^-20 of an edge e_c.
// (b) covers the rounding of u · k (2^-24 relative): a u within it of an edge may
// land in the cell beside its own, and then no boundary lies between u and the
// edge, so level[c] and the compare still count the boundaries <= u.  make() picks
// k for which both hold (checked here in double, where e_c is within 2^-50 of
// its real value), or returns usable = false: the caller then searches by halves.
#pragma once

#include <cstdint>
#include <limits>

namespace tq::level_grid {

template <int Cells>
struct Grid {
    bool usable = false;
    float scale = 0;  // k
    alignas(64) std::int32_t level[Cells] = {};
    alignas(64) float next[Cells] = {};
};

// Cells: 16 (one register of 16 lanes), 32 for more than 8 table entries (a lookup
// in two registers).
template <int N>
constexpr int cells_for() { return N <= 8 ? 16 : 32; }

// The grid of the N - 1 positive boundaries b[0..N-2], ascending (b[N-1] is the
// table's +inf pad), over Cells cells.
template <int N, int Cells = cells_for<N>()>
constexpr Grid<Cells> make(const float* b) {
    constexpr int n = N - 1;  // finite boundaries
    // The generator asks for 3 to 15 (generator/cxx.py grid_search); one boundary needs
    // one compare by halves too, and more than 15 would need more cells.
    if constexpr (n < 3 || n > 15) return Grid<Cells>{};
    const double top = b[n - 1];
    for (int attempt = 0; attempt < 256; ++attempt) {
        // The last cell starts just past the top boundary, then k shrinks by 2^-12 steps.
        Grid<Cells> g;
        g.scale = static_cast<float>((Cells - 1) / (top * (1 + 0x1p-10)) * (1 - attempt * 0x1p-12));
        const double k = g.scale;
        bool ok = (Cells - 1) / k > top * (1 + 0x1p-20);  // (a): nothing in the last cell
        int i = 0;                                       // boundaries <= the current edge
        for (int c = 0; c < Cells && ok; ++c) {
            const double edge = c / k, end = (c + 1) / k;
            while (i < n && b[i] <= edge) ++i;
            g.level[c] = N + i;
            g.next[c] = i < n ? b[i] : std::numeric_limits<float>::infinity();
            for (int j = 0; j < n; ++j) {
                const double d = b[j] - edge;
                if (c > 0 && (d < 0 ? -d : d) <= edge * 0x1p-20) ok = false;  // (b)
            }
            if (c + 1 < Cells && i + 1 < n && b[i + 1] < end) ok = false;  // (a): two in one cell
        }
        if (ok) {
            g.usable = true;
            return g;
        }
    }
    return Grid<Cells>{};
}

}  // namespace tq::level_grid
