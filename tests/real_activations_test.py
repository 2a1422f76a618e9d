#!/usr/bin/env python3
"""Attention-output fidelity on real activations: post-RoPE keys, values and queries of
SmolLM2-135M-Instruct at layers 1, 15 and 29 (tests/fixtures/make_real_kv.py), through
`tq eval`, on every ISA this CPU runs.  Floors sit a little below what was measured
(AVX-512, the same on every ISA up to rounding):

    layer  K4/V2   K4/V4
      1    0.9616  0.9877
     15    0.9584  0.9889
     29    0.9755  0.9949
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FLOORS = {1: {(4, 2): 0.955, (4, 4): 0.985}, 15: {(4, 2): 0.952, (4, 4): 0.986}, 29: {(4, 2): 0.97, (4, 4): 0.992}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tq", required=True)
    a = ap.parse_args()
    listing = json.loads(subprocess.run([a.tq, "list", "--json"], capture_output=True, text=True, check=True).stdout)
    built = {(k["head_dim"], k["bits"]) for k in listing["kernels"]}
    failures, checked = [], 0
    for isa in [i["name"] for i in listing["isas"] if i["runs_here"]]:
        for layer, floors in FLOORS.items():
            stem = FIXTURES / f"smollm2-L{layer}"
            for (kb, vb), floor in floors.items():
                if (64, kb) not in built or (64, vb) not in built:
                    continue
                r = subprocess.run([a.tq, "eval", "--keys", f"{stem}-keys.npy", "--values", f"{stem}-values.npy",
                                    "--queries", f"{stem}-queries.npy", "--k-bits", str(kb), "--v-bits", str(vb), "--json"],
                                   capture_output=True, text=True, env={**os.environ, "TQ_ISA": isa})
                try:
                    got = json.loads(r.stdout)["configs"][0]["attention_cosine_mean"]
                except (ValueError, KeyError, IndexError):
                    failures.append(f"{isa} layer {layer} K{kb}/V{vb}: tq eval failed: rc={r.returncode} {r.stderr.strip()}")
                    continue
                checked += 1
                print(f"{isa} layer {layer} K{kb}/V{vb}: attention-output cosine {got:.4f} (floor {floor})")
                if got < floor:
                    failures.append(f"{isa} layer {layer} K{kb}/V{vb}: attention-output cosine {got:.4f} < {floor}")
    if checked == 0 and not failures:
        print("skipped: this build has neither K4/V2 nor K4/V4 at head dim 64")
        return 77
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
