// AVX-512 encode's one-step level search (runtime/isa/level_grid.hpp): usable for every
// 3-, 4- and 5-bit codebook of the build, and the level the search by halves gives
// (N + the number of the N - 1 positive boundaries <= u) for every u near a boundary
// or a cell's edge and on a fine sweep, in the float steps the kernel takes.  The
// kernel itself is checked against the scalar encode's bytes by the cross-ISA tests.
#include "isa/level_grid.hpp"
#include "test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

// The kernel's steps in scalar float: cell = min(trunc(u * k), cells - 1), then
// level[cell] + (u >= next[cell]).
template <int Cells>
int grid_level(const tq::level_grid::Grid<Cells>& g, float u) {
    const float x = u * g.scale;
    const auto cell = std::min<std::uint32_t>(static_cast<std::uint32_t>(static_cast<std::int32_t>(x)), Cells - 1);
    return g.level[cell] + (u >= g.next[cell] ? 1 : 0);
}

template <int N>
void check_grid(const float* positive) {  // N - 1 positive boundaries, then +inf
    const auto g = tq::level_grid::make<N>(positive);
    REQUIRE(g.usable);
    constexpr int cells = sizeof g.level / sizeof g.level[0];
    std::vector<float> us;
    const auto around = [&](float x) {
        float lo = x, hi = x;
        us.push_back(x);
        for (int k = 0; k < 16; ++k) {
            lo = std::nextafter(lo, 0.0f);
            hi = std::nextafter(hi, INFINITY);
            us.push_back(lo);
            us.push_back(hi);
        }
    };
    for (int i = 0; i + 1 < N; ++i) around(positive[i]);
    for (int c = 1; c < cells; ++c) around(static_cast<float>(c / double(g.scale)));
    const float top = positive[N - 2] * 1.5f;
    for (int s = 0; s <= 100000; ++s) us.push_back(top * float(s) / 100000.0f);
    us.push_back(1.0f);  // a unit vector's largest coordinate
    int wrong = 0;
    for (const float u : us) {
        const int exact = N + int(std::upper_bound(positive, positive + N - 1, u) - positive);
        if (grid_level(g, u) != exact) ++wrong;
    }
    CHECK(wrong == 0);
}

// Segment codebook of `bits` (full boundary table of 2^bits - 1): its positive half.
void check_codebook(const float* boundaries, int bits) {
    const int half = 1 << (bits - 1);
    std::vector<float> positive(boundaries + half, boundaries + 2 * half - 1);
    positive.push_back(INFINITY);
    CAPTURE(bits);
    if (bits == 3) check_grid<4>(positive.data());
    if (bits == 4) check_grid<8>(positive.data());
    if (bits == 5) check_grid<16>(positive.data());
}

}  // namespace

TEST_CASE("level grid: usable for 3 to 5 bits, and every level the search by halves gives") {
    int checked = 0;
    for (const tq_bit_kernels& v : tq::variants()) {
        CAPTURE(v.head_dim);
        CAPTURE(v.rate_eighths);
        if (v.bits >= 3 && v.bits <= 5) check_codebook(v.boundaries, v.bits), ++checked;
        if (v.high_boundaries && v.bits + 1 >= 3 && v.bits + 1 <= 5) check_codebook(v.high_boundaries, v.bits + 1), ++checked;
    }
    MESSAGE(checked << " codebooks checked");
}
