#!/usr/bin/env python3
"""Where a TurboQuant config's loss comes from (docs/quality.md): its keys alone and its
values alone (the other kind at 8 bits), then each layer alone (every other layer at
K8/V8), as mean KL against the FP32 cache in one `tq-llama perplexity --sweep`.

    python3 examples/llama/quality/attribution.py --tq-llama build/default/examples/llama/tq-llama \\
        --model M.gguf --text T --layers 30 --config 3/3 --windows 4

At 8 bits a cache's own KL is ~1e-4, so each row is, to that precision, the KL of the
part named.  Levers (":c=keys:...") after the config apply to every item.
"""
from __future__ import annotations

import argparse
import subprocess
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tq-llama", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--layers", type=int, required=True, help="the model's layers")
    ap.add_argument("--config", required=True, help="K/V[:levers], e.g. 3/3 or 4/2:c=both")
    ap.add_argument("--window", type=int, default=512)
    ap.add_argument("--windows", type=int, default=4)
    args = ap.parse_args()
    bits, _, levers = args.config.partition(":")
    key_bits, value_bits = bits.split("/")
    suffix = ":" + levers if levers else ""
    items = [f"{bits}{suffix}", f"{key_bits}/8{suffix}", f"8/{value_bits}{suffix}", f"8/8{suffix}"]
    items += [f"8/8{suffix}:L{layer}={bits}" for layer in range(args.layers)]
    cmd = [args.tq_llama, "perplexity", "--model", args.model, "--text", args.text, "--window", str(args.window),
           "--windows", str(args.windows), "--sweep", ",".join(items)]
    print("$ " + " ".join(cmd), file=sys.stderr)
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        print(out.stderr, file=sys.stderr)
        return out.returncode
    rows = [line for line in out.stdout.splitlines() if line.startswith("| tq ")]
    print(f"| part of {args.config} | mean KL | vs FP32 perplexity |")
    print("|---|---|---|")
    names = ["all of it", "keys only (values at 8 bits)", "values only (keys at 8 bits)", "neither (K8/V8)"]
    names += [f"layer {layer} only" for layer in range(args.layers)]
    for name, row in zip(names, rows):
        cells = [c.strip() for c in row.strip("|").split("|")]
        print(f"| {name} | {cells[4]} | {cells[3]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
