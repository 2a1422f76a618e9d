#!/usr/bin/env python3
"""A per-layer bit allocation for one model at a byte budget (docs/quality.md).

Measures each (layer, keys or values) part at the base rate alone, every other part at
8 bits, in one `tq-llama perplexity --sweep` (the same rows as attribution.py, split by
kind), then spends the budget greedily where it buys the most KL:

    python3 examples/llama/quality/allocate.py --tq-llama build/default/examples/llama/tq-llama \\
        --model M.gguf --text T --layers 30 --head-dim 64 --kv-heads 3 --base 3/3 --budget 168.5

A part's KL at b bits is modelled as its KL at the base rate times D(b)/D(base), D the
mean squared error of the Lloyd-Max quantizer of a Gaussian (Max 1960; the rotated
coordinates are near Gaussian): KL is quadratic in the score and output errors, so
linear in D.  A fractional rate splits the coordinates between the two integer rates
around it, so its D is their mix.  Prints the measured parts and the config, in the
sweep's lever syntax, to run on held-out text.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter

# Lloyd-Max MSE of a unit Gaussian at 1..8 bits.
LLOYD_MAX_MSE = {1: 0.3634, 2: 0.1175, 3: 0.03454, 4: 0.009497, 5: 0.002499, 6: 0.0006418, 7: 0.0001627,
                 8: 0.00004104}
RATES = [2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 8]  # what tq-llama's kernels are built for


def mse(bits: float) -> float:
    low = int(bits)
    frac = bits - low
    return LLOYD_MAX_MSE[low] if frac == 0 else (1 - frac) * LLOYD_MAX_MSE[low] + frac * LLOYD_MAX_MSE[low + 1]


def rate(bits: float) -> str:
    return f"{bits:g}"


def sweep(a, items: list[str]) -> list[list[str]]:
    cmd = [a.tq_llama, "perplexity", "--model", a.model, "--text", a.text, "--window", str(a.window),
           "--windows", str(a.windows), "--sweep", ",".join(items)]
    print("$ " + " ".join(cmd), file=sys.stderr)
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.exit(out.stderr)
    return [[c.strip() for c in line.strip("|").split("|")] for line in out.stdout.splitlines()
            if line.startswith("| tq ")]


def allocate(kl: dict[tuple[int, str], float], base: dict[str, float], budget_bits: float) -> dict:
    """Greedy: start every part at the lowest rate, then take the upgrade with the most KL
    saved per bit until the budget (in rate units summed over parts) is spent."""
    bits = {part: RATES[0] for part in kl}
    model = {part: kl[part] / mse(base[part[1]]) for part in kl}
    spent = sum(bits.values())
    while True:
        best, gain = None, 0.0
        for part, b in bits.items():
            i = RATES.index(b)
            if i + 1 == len(RATES) or spent + RATES[i + 1] - b > budget_bits + 1e-9:
                continue
            g = model[part] * (mse(b) - mse(RATES[i + 1])) / (RATES[i + 1] - b)
            if g > gain:
                best, gain = part, g
        if best is None:
            return bits
        spent += RATES[RATES.index(bits[best]) + 1] - bits[best]
        bits[best] = RATES[RATES.index(bits[best]) + 1]


def config(bits: dict, layers: int) -> str:
    pairs = [(bits[(l, "K")], bits[(l, "V")]) for l in range(layers)]
    common = Counter(pairs).most_common(1)[0][0]
    text = f"{rate(common[0])}/{rate(common[1])}"
    for l, (k, v) in enumerate(pairs):
        if (k, v) != common:
            text += f":L{l}={rate(k)}/{rate(v)}"
    return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tq-llama", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--head-dim", type=int, required=True)
    ap.add_argument("--kv-heads", type=int, required=True)
    ap.add_argument("--base", default="3/3", help="K/V rate at which each part is measured")
    ap.add_argument("--budget", type=float, required=True, help="bytes per token per layer, all in")
    ap.add_argument("--window", type=int, default=512)
    ap.add_argument("--windows", type=int, default=2)
    a = ap.parse_args()
    kb, vb = a.base.split("/")
    items = [a.base] + [f"8/8:L{l}={kb}/8" for l in range(a.layers)] + [f"8/8:L{l}=8/{vb}" for l in range(a.layers)]
    rows = sweep(a, items)
    base_bytes = float(rows[0][1]) / a.layers
    kl = {(l, "K"): float(rows[1 + l][4]) for l in range(a.layers)}
    kl |= {(l, "V"): float(rows[1 + a.layers + l][4]) for l in range(a.layers)}
    base = {"K": float(kb), "V": float(vb)}
    # One bit on one kind of one layer costs head_dim/8 bytes per KV head in that layer.
    bytes_per_bit = a.head_dim / 8 * a.kv_heads / a.layers
    budget_bits = a.layers * (base["K"] + base["V"]) + (a.budget - base_bytes) / bytes_per_bit
    bits = allocate(kl, base, budget_bits)
    print(f"{a.base}: {base_bytes:.1f} bytes per token per layer, mean KL {rows[0][4]}\n")
    print("| layer | KL, keys at base | KL, values at base | allocated K/V |")
    print("|---|---|---|---|")
    for l in range(a.layers):
        print(f"| {l} | {kl[(l, 'K')]:.5f} | {kl[(l, 'V')]:.5f} | {rate(bits[(l, 'K')])}/{rate(bits[(l, 'V')])} |")
    predicted = sum(kl[p] * mse(bits[p]) / mse(base[p[1]]) for p in kl)
    print(f"\nmodelled KL {predicted:.5f} (parts at base add to {sum(kl.values()):.5f})")
    print(f"config: {config(bits, a.layers)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
