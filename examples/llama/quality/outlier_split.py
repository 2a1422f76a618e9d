#!/usr/bin/env python3
"""Would the TurboQuant paper's outlier-aware split pay on top of the library's levers?
(docs/levers.md, "Measured and dropped").  A model of the key quantizer on real
activations (tests/fixtures/smollm2-L{1,15,29}-{keys,queries}.npy, SmolLM2-135M):

    python3 examples/llama/quality/outlier_split.py

Keys are centered on the mean of their first 128 positions and, where the row says so,
smoothed against the queries (σ = (E k²/E q²)^¼, as the library does); then quantized by a
random rotation, a per-vector least-squares scale and Gaussian Lloyd-Max levels — as a
whole (`uniform`), or as the paper's split: the n channels of largest RMS (chosen from the
first 128 positions) rotated, scaled and quantized apart at more bits, the rest at fewer.
A split stores one more 16-bit scale per vector; every row spends the same 3.25 bits per
coordinate all in (3 of codes + 16/64 of that second scale) unless it says otherwise.
Figure: score error energy E (q·Δk)² over score variance, mean of the 3 KV heads; lower
is better.  KL is linear in this error (docs/quality.md).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
RNG = np.random.default_rng(1)


def lloyd_max(bits: int, samples: int = 200_000) -> np.ndarray:
    x = np.sort(RNG.standard_normal(samples))
    levels = np.quantile(x, (np.arange(2**bits) + 0.5) / 2**bits)
    for _ in range(60):
        cells = np.searchsorted((levels[1:] + levels[:-1]) / 2, x)
        levels = np.bincount(cells, x, 2**bits) / np.bincount(cells, None, 2**bits)
    return levels


LEVELS = {b: lloyd_max(b) for b in range(1, 9)}


def rates(d: int, bits: float) -> np.ndarray:
    """A fractional rate as the library stores it: some coordinates one bit richer."""
    low = int(bits)
    out = np.full(d, low)
    out[: int(round((bits - low) * d))] += 1
    return out


def quantize(x: np.ndarray, bits: float) -> np.ndarray:
    d = x.shape[1]
    rotation, _ = np.linalg.qr(RNG.standard_normal((d, d)))
    y = x @ rotation.T
    norm = np.linalg.norm(y, axis=1, keepdims=True) + 1e-30
    u = y / norm * np.sqrt(d)
    code = np.empty_like(u)
    per = rates(d, bits)
    for b in np.unique(per):
        cols = per == b
        levels = LEVELS[int(b)]
        code[:, cols] = levels[np.searchsorted((levels[1:] + levels[:-1]) / 2, u[:, cols])]
    scale = (u * code).sum(1, keepdims=True) / (code * code).sum(1, keepdims=True)
    return (code * scale * norm / np.sqrt(d)) @ rotation


def score_error(layer: int, bits: float, smooth: bool, split: tuple[int, float, float] | None) -> float:
    keys = np.load(FIXTURES / f"smollm2-L{layer}-keys.npy").astype(np.float64)
    queries = np.load(FIXTURES / f"smollm2-L{layer}-queries.npy").astype(np.float64)
    kv_heads, group = keys.shape[1], queries.shape[1] // keys.shape[1]
    error, variance = 0.0, 0.0
    for h in range(kv_heads):
        k = keys[:, h] - keys[:128, h].mean(0)
        q = queries[:, group * h:group * (h + 1)].reshape(-1, keys.shape[2])
        sigma = (np.mean(k**2, 0) / np.mean(q**2, 0)) ** 0.25 if smooth else np.ones(k.shape[1])
        k, q = k / sigma, q * sigma
        if split is None:
            k_hat = quantize(k, bits)
        else:
            n, rich, poor = split
            order = np.argsort(-np.mean(k[:128] ** 2, 0))
            k_hat = np.empty_like(k)
            k_hat[:, order[:n]] = quantize(k[:, order[:n]], rich)
            k_hat[:, order[n:]] = quantize(k[:, order[n:]], poor)
        error += np.mean((q @ (k_hat - k).T) ** 2)
        variance += np.var(q @ k.T)
    return error / variance


ROWS = [
    ("uniform 3 bits, one scale (0.25 bit per coordinate less than the others)", 3, None),
    ("uniform 3.25 bits (the split's bytes, spent on every coordinate)", 3.25, None),
    ("split: 8 channels at 6 bits, 56 at 2.43", None, (8, 6, 2 + 24 / 56)),
    ("split: 16 channels at 5 bits, 48 at 2.33", None, (16, 5, 2 + 1 / 3)),
    ("split: 16 channels at 4 bits, 48 at 2.67", None, (16, 4, 2 + 2 / 3)),
]


def main() -> int:
    print("| keys of SmolLM2 | smoothed | layer 1 | layer 15 | layer 29 |")
    print("|---|---|---|---|---|")
    for smooth in (False, True):
        for name, bits, split in ROWS:
            cells = [f"{score_error(layer, bits, smooth, split):.4f}" for layer in (1, 15, 29)]
            print(f"| {name} | {'yes' if smooth else 'no'} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
