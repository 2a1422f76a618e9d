#!/usr/bin/env python3
"""Keeps generated/ (the checked-in default kernel set) equal to what the
generator makes of the default variants.

    sync_generated.py --check --tq-codebook PATH --head-dims "64;80;96;128;160;192;256" --bits "2;3;4" --isas "scalar;avx2;avx512"
        regenerates into a temporary folder and fails, listing the files, on any difference
    sync_generated.py --write ...
        rewrites generated/ from scratch

The CMake target `update-generated` runs --write with the build's tq-codebook.
"""
from __future__ import annotations

import argparse
import filecmp
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKED_IN = ROOT / "generated"
sys.path.insert(0, str(ROOT / "generator"))
from generate import generate_with_codebooks  # noqa: E402
from layout import Rate  # noqa: E402
from variants import Config  # noqa: E402


def generate(tq_codebook: str, dims: list[str], bits: list[str], isas: list[str], out: Path) -> None:
    cfg = Config(tuple(int(d) for d in dims), tuple(Rate.parse(b) for b in bits), tuple(isas))
    generate_with_codebooks(tq_codebook, cfg, out)


def differences(expected: Path, actual: Path) -> list[str]:
    files = lambda root: {p.relative_to(root) for p in root.rglob("*") if p.is_file()}
    want, have = files(expected), files(actual)
    out = [f"missing from generated/: {p}" for p in sorted(want - have)]
    out += [f"not produced by the generator: {p}" for p in sorted(have - want)]
    out += [f"differs: {p}" for p in sorted(want & have) if not filecmp.cmp(expected / p, actual / p, shallow=False)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    ap.add_argument("--tq-codebook", required=True)
    ap.add_argument("--head-dims", required=True, help="';' or ',' separated")
    ap.add_argument("--bits", required=True, help="';' or ',' separated")
    ap.add_argument("--isas", required=True, help="';' or ',' separated")
    args = ap.parse_args()
    split = lambda s: [x for x in s.replace(";", ",").split(",") if x]
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "generated"
        generate(args.tq_codebook, split(args.head_dims), split(args.bits), split(args.isas), fresh)
        if args.write:
            shutil.rmtree(CHECKED_IN, ignore_errors=True)
            shutil.copytree(fresh, CHECKED_IN)
            print(f"wrote {CHECKED_IN}")
            return 0
        diff = differences(fresh, CHECKED_IN)
    if diff:
        print("generated/ is out of date; run `cmake --build <build> --target update-generated`:")
        print("\n".join("  " + line for line in diff))
        return 1
    print("generated/ matches the generator's output for the default variants")
    return 0


if __name__ == "__main__":
    sys.exit(main())
