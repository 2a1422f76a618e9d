#!/usr/bin/env python3
"""What the integer score path's int8 roundings add to a score's error, per key bit width
(docs/kernels.md, "No integer path above 5 bits").

Per coordinate, in units of the coordinate variance 1/d: the table's rounding
sum_l P(l) (c_l - step T_l)^2 (P(l): the level's probability for a Gaussian coordinate,
step = max|c| / 127, T_l = round(c_l / step)) and the query's, s_q^2 / 12 with
s_q = max|q| / 127 and max|q| about 3.5 standard deviations (in units of the query's
variance, which scales all three terms alike), against the codebook's own MSE; and
what the two add where the query keeps its residual (R_i, 254 steps per step of Q_i:
the query's term / 254^2), as it does for 32-level codebooks.

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
    query = (3.5 / 127) ** 2 / 12  # in units of sigma^2
    print(f"head dim {d}: per coordinate, in units of 1/d")
    print("| key bits | levels | codebook MSE | table rounding | query rounding | added | added, with the residual |")
    print("|---|---|---|---|---|---|---|")
    for bits in (4, 5, 6, 8):
        cb = codebook(tool, d, bits)
        c, b = cb["centroids"], cb["boundaries"]
        edges = [-math.inf, *b, math.inf]  # b: the boundaries between consecutive levels
        step = max(abs(x) for x in c) / 127
        table = sum((cdf(edges[i + 1]) - cdf(edges[i])) * (x - step * round(x / step)) ** 2
                    for i, x in enumerate(c)) * d
        mse = cb["mse_per_coordinate"] * d
        added = 100 * (table + query) / mse
        fine = 100 * (table + query / 254 ** 2) / mse
        percent = lambda x: f"+{x:.2g}%" if x < 10 else f"+{x:.0f}%"
        print(f"| {bits} | {len(c)} | {mse:.2g} | {table:.2g} | {query:.2g} | {percent(added)} | {percent(fine)} |")


if __name__ == "__main__":
    main()
