#!/usr/bin/env python3
"""Writes a self-contained TurboQuant source folder for an engine's variants.

    export.py --tq-codebook PATH --head-dims 64,128 --bits 2,4 [--isas scalar,avx2,avx512] --out DIR

DIR then holds the generated kernels, the runtime (registry, KV cache, C and C++
API) with its headers, build.sh, a short CMakeLists.txt and a README: it compiles
with a C++20 compiler alone — no Python, Boost or CMake (docs/embedding.md).
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from generate import generate_with_codebooks, int_list, name_list, rate_list
from variants import ISAS, Config

ROOT = Path(__file__).resolve().parent.parent
ISA_FLAGS = {"scalar": "", "avx2": "-mavx2 -mfma", "avx512": "-mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx2 -mfma"}
INCLUDES = "-Iruntime/include -Iruntime -Iruntime/src -Igenerated"

BUILD_SH = """#!/bin/sh
# Builds libturboquant.a with a C++20 compiler alone: CXX (default c++), CXXFLAGS.
# Each ISA's kernels get that ISA's flags; the registry picks the best one the CPU
# runs.  -ffp-contract=off keeps the bytes identical across ISAs (docs/kernels.md).
set -e
cd "$(dirname "$0")"
CXX=${{CXX:-c++}}
FLAGS="-std=c++20 -O2 -ffp-contract=off -fPIC {includes} ${{CXXFLAGS:-}}"
mkdir -p obj
for f in runtime/src/*.cpp; do $CXX $FLAGS -c "$f" -o "obj/$(basename "$f" .cpp).o"; done
{per_isa}
rm -f libturboquant.a
ar rcs libturboquant.a obj/*.o
echo "built libturboquant.a"
"""

CMAKELISTS = """# The exported TurboQuant sources as a CMake library: add_subdirectory(<this folder>)
# and link turboquant.  Generated for head dims {dims}, bits {bits}, ISAs {isas}.
cmake_minimum_required(VERSION 3.20)
project(turboquant_export LANGUAGES CXX)
file(GLOB runtime_sources CONFIGURE_DEPENDS runtime/src/*.cpp)
{globs}add_library(turboquant STATIC ${{runtime_sources}}{sources})
target_include_directories(turboquant PUBLIC runtime/include PRIVATE runtime runtime/src generated)
target_compile_features(turboquant PUBLIC cxx_std_20)
target_compile_options(turboquant PRIVATE -ffp-contract=off)
find_package(Threads REQUIRED)  # the cache's attention pool
target_link_libraries(turboquant PUBLIC Threads::Threads)
{flags}"""

README = """# TurboQuant kernels — exported source

Head dims {dims}; bit rates {bits} (keys and values); ISAs {isas}. Written by
`python3 generator/export.py {args}` from TurboQuant {version}.

Build with nothing but a C++20 compiler:

```sh
sh build.sh                 # -> libturboquant.a (CXX=clang++ sh build.sh for clang)
c++ -std=c++20 -Iruntime/include my_engine.cpp libturboquant.a -pthread
```

or by hand: compile `runtime/src/*.cpp` and `generated/scalar/*.cpp` with
`-std=c++20 -O2 -ffp-contract=off {includes}`, and each `generated/<isa>/*.cpp` with
that ISA's flags added ({flag_list}). With CMake: `add_subdirectory(<this folder>)`,
link `turboquant`.

API: `runtime/include/turboquant/turboquant.h` (C: `fa_tq_init`, `fa_tq_cache_new`,
`fa_tq_attention`, ...), `turboquant.hpp` (C++), `registry.h` (the kernels
themselves). Layout of the packed bytes and the rotations: the TurboQuant docs
(packed-format.md, rotations.md).
"""


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tq-codebook", required=True, help="the tq-codebook tool of a TurboQuant build")
    ap.add_argument("--head-dims", type=int_list, required=True)
    ap.add_argument("--bits", type=rate_list, required=True)
    ap.add_argument("--isas", type=name_list, default=ISAS)
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
    per_isa_sh = "\n".join(
        f'for f in generated/{isa}/*.cpp; do $CXX $FLAGS {ISA_FLAGS[isa]} -c "$f" -o "obj/$(basename "$f" .cpp).o"; done'
        .replace("  ", " ") for isa in isas)
    (out / "build.sh").write_text(BUILD_SH.format(includes=INCLUDES, per_isa=per_isa_sh))
    globs = "".join(f"file(GLOB {isa}_sources CONFIGURE_DEPENDS generated/{isa}/*.cpp)\n" for isa in isas)
    sources = "".join(f" ${{{isa}_sources}}" for isa in isas)
    flags = "".join(f'set_source_files_properties(${{{isa}_sources}} PROPERTIES COMPILE_OPTIONS '
                    f'"{ISA_FLAGS[isa].replace(" ", ";")}")\n' for isa in isas if ISA_FLAGS[isa])
    cmake = CMAKELISTS.format(dims=join(cfg.head_dims), bits=join(cfg.bits), isas=join(isas), globs=globs,
                              sources=sources, flags=flags)
    (out / "CMakeLists.txt").write_text(cmake)
    version = (ROOT / "CMakeLists.txt").read_text().split("project(TurboQuant VERSION ")[1].split()[0]
    flag_list = "; ".join(f"{isa}: `{ISA_FLAGS[isa]}`" for isa in isas if ISA_FLAGS[isa]) or "none"
    (out / "README.md").write_text(README.format(
        dims=join(cfg.head_dims), bits=join(cfg.bits), isas=join(isas), version=version, includes=INCLUDES,
        flag_list=flag_list, args=f"--head-dims {join(cfg.head_dims)} --bits {join(cfg.bits)} --isas {join(isas)} "
                                  f"--out {out.name}"))
    print(f"exported {sum(1 for _ in out.rglob('*.cpp'))} sources to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
