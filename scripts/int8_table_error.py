#!/usr/bin/env python3
"""What the integer score path's int8 roundings add to a score's error, per key bit width,
and what int16 ones add, as the path rounds above 32 levels (docs/kernels.md, "The
integer score above 32 levels").

Per coordinate, in units of the coordinate variance 1/d: the table's rounding
sum_l P(l) (c_l - step T_l)^2 (P(l): the level's probability for a Gaussian coordinate,
step = max|c| / 127, T_l = round(c_l / step)) and the query's, s_q^2 / 12 with
s_q = max|q| / 127 and max|q| about 3.5 standard deviations (in units of the query's
variance, which scales all three terms alike), against the codebook's own MSE; and
what the two add where the query keeps its residual (R_i, 254 steps per step of Q_i:
the query's term / 254^2), as it does for 32-level codebooks; and both roundings with
M = 2047 in place of 127 (runtime/isa/int16.hpp: the largest M with d M^2 < 2^31, up to
head dim 512).

Usage: int8_table_error.py path/to/tq-codebook [head_dim]
"""
import json
import math
import subprocess
import sys


def codebook(tool: str, head_dim: int, bits: int) -> dict:
    out = subprocess.run([tool, "--head-dim", str(head_dim), "--bits", str(bits), "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.strip().splitlines()[-1])
    tool, d = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 128
    sigma = 1 / math.sqrt(d)
    cdf = lambda x: 0.5 * (1 + math.erf(x / (sigma * math.sqrt(2))))
    m16 = 2047
    while d * m16 * m16 > 2**31 - 1:
        m16 -= 1
    query = lambda m: (3.5 / m) ** 2 / 12  # in units of sigma^2
    print(f"head dim {d}: per coordinate, in units of 1/d")
    print("| key bits | levels | codebook MSE | table rounding | query rounding | added | added, with the residual "
          f"| added, int16 (M = {m16}) |")
    print("|---|---|---|---|---|---|---|---|")
    for bits in (4, 5, 6, 7, 8):
        cb = codebook(tool, d, bits)
        c, b = cb["centroids"], cb["boundaries"]
        edges = [-math.inf, *b, math.inf]  # b: the boundaries between consecutive levels
        mse = cb["mse_per_coordinate"] * d

        def table(m: int) -> float:  # the rounding of centroids to integers of step max|c| / m
            step = max(abs(x) for x in c) / m
            return sum((cdf(edges[i + 1]) - cdf(edges[i])) * (x - step * round(x / step)) ** 2
                       for i, x in enumerate(c)) * d

        added = 100 * (table(127) + query(127)) / mse
        fine = 100 * (table(127) + query(127) / 254 ** 2) / mse
        wide = 100 * (table(m16) + query(m16)) / mse
        percent = lambda x: f"+{x:.2g}%" if x < 10 else f"+{x:.0f}%"
        print(f"| {bits} | {len(c)} | {mse:.2g} | {table(127):.2g} | {query(127):.2g} | {percent(added)} "
              f"| {percent(fine)} | {percent(wide)} |")


if __name__ == "__main__":
    main()
