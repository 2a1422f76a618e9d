#!/usr/bin/env python3
"""Writes a self-contained TurboQuant source folder for an engine's variants.

    export.py --tq-codebook PATH --head-dims 64,128 --bits 2,4 [--isas scalar,avx2,avx512] --out DIR
        (--isas: default this machine's, from isas.py)

DIR then holds the generated kernels, the runtime (registry, KV cache, C and C++
API) with its headers, build.sh, a short CMakeLists.txt and a README: it compiles
with a C++20 compiler alone — no Python, Boost or CMake (docs/embedding.md).
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from environment import make_environment
from generate import generate_with_codebooks, int_list, name_list, rate_list
import isas as isa_table
from variants import Config

ROOT = Path(__file__).resolve().parent.parent
ISA_FLAGS = {isa.name: " ".join(isa.flags) for isa in isa_table.ISAS}
INCLUDES = "-Iruntime/include -Iruntime -Iruntime/src -Igenerated"

def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tq-codebook", required=True, help="the tq-codebook tool of a TurboQuant build")
    ap.add_argument("--head-dims", type=int_list, required=True)
    ap.add_argument("--bits", type=rate_list, required=True)
    ap.add_argument("--isas", type=name_list, default=isa_table.for_this_machine())
    ap.add_argument("--score-accumulators", type=int, default=2, help="tuning (docs/tuning.md)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    try:
        cfg = Config(head_dims=args.head_dims, bits=args.bits, isas=args.isas,
                     score_accumulators=args.score_accumulators)
    except ValueError as e:
        ap.error(str(e))
    if args.out.exists() and any(args.out.iterdir()):
        ap.error(f"{args.out} exists and is not empty")

    out = args.out
    generate_with_codebooks(args.tq_codebook, cfg, out / "generated")
    shutil.rmtree(out / "generated-codebook-json", ignore_errors=True)
    for part in ("include", "isa", "src"):
        shutil.copytree(ROOT / "runtime" / part, out / "runtime" / part)

    join = lambda xs: ",".join(str(x) for x in xs)
    isas = list(cfg.isas)
    version = (ROOT / "CMakeLists.txt").read_text().split("project(TurboQuant VERSION ")[1].split()[0]
    facts = dict(dims=join(cfg.head_dims), bits=join(cfg.bits), isas=isas, isa_flags=ISA_FLAGS, includes=INCLUDES,
                 version=version,
                 flag_list="; ".join(f"{isa}: `{ISA_FLAGS[isa]}`" for isa in isas if ISA_FLAGS[isa]) or "none",
                 args=f"--head-dims {join(cfg.head_dims)} --bits {join(cfg.bits)} --isas {join(isas)} --out {out.name}")
    env = make_environment()
    for name in ("build.sh", "CMakeLists.txt", "README.md"):  # templates/export/<name>.j2
        (out / name).write_text(env.get_template(f"export/{name}.j2").render(**facts))
    print(f"exported {sum(1 for _ in out.rglob('*.cpp'))} sources to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
