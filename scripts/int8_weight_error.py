#!/usr/bin/env python3
"""What the integer value sum's rounded weights add to attention's output error
(docs/kernels.md, "The integer value sum").

accumulate_int rounds each weight w_t (the softmax weight times the value's scale) to an
integer in [0, 254] per chunk of 64 positions, step = the chunk's largest weight / 254,
and sums the products with the values' int8 centroids in int32 (runtime/isa/int8.hpp).
This measures the weights' part alone, at 254 levels and at 127 (seven-bit weights),
per chunk of 64 and 128, in float64, on the
recorded activations of tests/fixtures (SmolLM2-135M, the last 32 positions' queries of
three layers, each attending causally over the 512 tokens before it): the relative L2
error and 1 - cosine of the output against the exact weights' output.  `tq eval` on the
same files gives K4/V4's own output error for comparison.

Usage: int8_weight_error.py [fixture prefix, default tests/fixtures/smollm2] (needs numpy)
"""
import sys

import numpy as np


def output_errors(prefix: str, layer: int, chunk: int, top: int) -> tuple[float, float, float, float]:
    load = lambda what: np.load(f"{prefix}-L{layer}-{what}.npy").astype(np.float64)
    keys, values, queries = load("keys"), load("values"), load("queries")
    n, n_queries, group = keys.shape[0], queries.shape[0], queries.shape[1] // keys.shape[1]
    rel, cos = [], []
    for j in range(n_queries):
        last = n - n_queries + j  # the query's own position
        for h in range(queries.shape[1]):
            k, v = keys[: last + 1, h // group], values[: last + 1, h // group]
            s = k @ queries[j, h] / np.sqrt(keys.shape[2])
            w = np.exp(s - s.max())
            w /= w.sum()
            rounded = np.empty_like(w)
            for c0 in range(0, last + 1, chunk):
                step = w[c0 : c0 + chunk].max() / top
                rounded[c0 : c0 + chunk] = np.round(w[c0 : c0 + chunk] / step) * step
            exact, approx = w @ v, rounded @ v
            rel.append(np.linalg.norm(approx - exact) / np.linalg.norm(exact))
            cos.append(approx @ exact / np.linalg.norm(approx) / np.linalg.norm(exact))
    return float(np.mean(rel)), float(np.max(rel)), 1 - float(np.mean(cos)), 1 - float(np.min(cos))


def main() -> None:
    if len(sys.argv) > 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    prefix = sys.argv[1] if len(sys.argv) == 2 else "tests/fixtures/smollm2"
    print("| layer | chunk | weight levels | rel. error mean | max | 1 - cos mean | max |")
    print("|---|---|---|---|---|---|---|")
    for layer in (1, 15, 29):
        for chunk in (64, 128):
            for top in (254, 127):
                rel, rel_max, cos, cos_max = output_errors(prefix, layer, chunk, top)
                print(f"| {layer} | {chunk} | {top} | {rel:.4f} | {rel_max:.4f} | {cos:.2e} | {cos_max:.2e} |")


if __name__ == "__main__":
    main()
