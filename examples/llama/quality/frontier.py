#!/usr/bin/env python3
"""The quality-per-byte frontier of docs/quality.md: mean KL divergence against KV bytes
per token for every cache in one or more `tq-llama perplexity --sweep` outputs, as a
table (stdout, markdown) and a plot (PNG).

    tq-llama perplexity --model M.gguf --text T --window 512 --windows 20 \\
        --sweep q8_0,q4_0,q4_0-norot,...,4/4,5/3 > sweep.md
    python3 examples/llama/quality/frontier.py --title "SmolLM2-135M" --layers 30 \\
        --png docs/figures/frontier-smollm2.png sweep.md

Needs matplotlib (pip install matplotlib) for the PNG only.  Bytes are per token per
layer (the sweep's figure, all layers, divided by --layers), so models compare.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Row:
    name: str
    bytes: float  # per token, all layers
    ppl_change: str
    kl: float
    top1: str

    @property
    def family(self) -> str:
        if self.name.startswith("tq "):
            return "TurboQuant"
        return "llama.cpp, no rotation" if self.name.endswith("-norot") else "llama.cpp (rotated, its default)"


def read_sweep(path: Path) -> list[Row]:
    """The rows of a sweep's table with a KL figure (not the FP32 reference)."""
    rows = []
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or cells[0] in ("KV cache", "---") or not cells[4]:
            continue
        rows.append(Row(cells[0], float(cells[1]), cells[3], float(cells[4]), cells[5]))
    return rows


def pareto(rows: list[Row]) -> set[str]:
    """Names of the rows that no other row beats at fewer or equal bytes."""
    best, out = float("inf"), set()
    for r in sorted(rows, key=lambda r: (r.bytes, r.kl)):
        if r.kl < best:
            best = r.kl
            out.add(r.name)
    return out


def plot(rows: list[Row], layers: int, title: str, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"TurboQuant": ("o", "tab:blue"), "llama.cpp (rotated, its default)": ("s", "tab:red"),
              "llama.cpp, no rotation": ("^", "tab:gray")}
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=110)
    for family, (marker, color) in styles.items():
        pts = [r for r in rows if r.family == family]
        if not pts:
            continue
        ax.scatter([r.bytes / layers for r in pts], [r.kl for r in pts], marker=marker, color=color, label=family,
                   zorder=3)
        for r in pts:
            ax.annotate(r.name.removeprefix("tq "), (r.bytes / layers, r.kl), fontsize=7, xytext=(4, 3),
                        textcoords="offset points")
    ax.set_yscale("log")
    ax.set_xlabel("KV bytes per token per layer (codes, scales, means)")
    ax.set_ylabel("mean KL divergence against the FP32 cache")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweeps", type=Path, nargs="+", help="tq-llama perplexity --sweep outputs")
    ap.add_argument("--layers", type=int, required=True, help="the model's layers (bytes are shown per layer)")
    ap.add_argument("--title", required=True)
    ap.add_argument("--png", type=Path, help="write the plot here")
    args = ap.parse_args()
    rows = {r.name: r for path in args.sweeps for r in read_sweep(path)}.values()
    rows = sorted(rows, key=lambda r: (r.bytes, r.kl))
    if not rows:
        print("frontier.py: no sweep rows with a KL figure in " + ", ".join(map(str, args.sweeps)), file=sys.stderr)
        return 1
    front = pareto(rows)
    print("| KV cache | bytes/token/layer | vs FP32 perplexity | mean KL | top-1 agreement | on the frontier |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r.name} | {r.bytes / args.layers:.1f} | {r.ppl_change} | {r.kl:.5f} | {r.top1} | "
              f"{'yes' if r.name in front else ''} |")
    if args.png:
        plot(list(rows), args.layers, args.title, args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
