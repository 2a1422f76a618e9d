#!/usr/bin/env python3
"""The four ways an engine embeds TurboQuant, each built from scratch in a
temporary folder and run (CTest labels them `consumer`):

    run.py find_package     --source ROOT --build BUILD ...  install BUILD, find_package it
                                                             (static, shared, turboquant_generate_kernels)
    run.py add_subdirectory --source ROOT ...                 vendor the source tree
    run.py export           --source ROOT --build BUILD ...  generator/export.py, then plain g++
    run.py c                --source ROOT --build BUILD ...  a C program, the installed shared library, pkg-config

--head-dim/--key-bits/--value-bits name a variant the installed build has.
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> str:
    print("+", " ".join(shlex.quote(str(c)) for c in cmd), flush=True)
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    print(r.stdout, end="", flush=True)
    if r.returncode:
        raise SystemExit(f"FAILED ({r.returncode}): {' '.join(str(c) for c in cmd)}")
    return r.stdout


def install(build: Path, prefix: Path) -> None:
    run(["cmake", "--install", build, "--prefix", prefix])


def cmake_project(src: Path, work: Path, *defs: str) -> Path:
    b = work / "build"
    run(["cmake", "-S", src, "-B", b, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", *defs])
    run(["cmake", "--build", b, "-j2"])
    return b


def variant_defs(a) -> list[str]:
    return [f"-DTQ_CONSUMER_HEAD_DIM={a.head_dim}", f"-DTQ_CONSUMER_KEY_BITS={a.key_bits}",
            f"-DTQ_CONSUMER_VALUE_BITS={a.value_bits}"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", choices=["find_package", "add_subdirectory", "export", "c"])
    ap.add_argument("--source", type=Path, required=True)
    ap.add_argument("--build", type=Path)
    ap.add_argument("--head-dim", default="128")
    ap.add_argument("--key-bits", default="4")
    ap.add_argument("--value-bits", default="2")
    ap.add_argument("--libdir", default="lib", help="CMAKE_INSTALL_LIBDIR of the build")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix=f"tq-consumer-{a.path}-") as tmp:
        work = Path(tmp)
        if a.path == "find_package":
            install(a.build, work / "prefix")
            b = cmake_project(HERE / "find_package", work, f"-DCMAKE_PREFIX_PATH={work / 'prefix'}",
                              f"-DHEAD_DIM={a.head_dim}", f"-DKEY_BITS={a.key_bits}", f"-DVALUE_BITS={a.value_bits}")
            for exe in ("consumer_static", "consumer_shared", "consumer_own_kernels"):
                run([b / exe])
        elif a.path == "add_subdirectory":
            b = cmake_project(HERE / "add_subdirectory", work, f"-DTURBOQUANT_SOURCE_DIR={a.source}")
            for exe in ("consumer", "consumer_own_kernels"):
                run([b / exe])
        elif a.path == "c":
            prefix = work / "prefix"
            install(a.build, prefix)
            env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / a.libdir / "pkgconfig"))
            flags = run(["pkg-config", "--cflags", "--libs", "turboquant"], env=env).split()
            run(["cc", "-std=c11", "-O2", "-Wall", "-Werror", *variant_defs(a), HERE / "consumer.c", "-o",
                 work / "consumer_c", *flags])
            run([work / "consumer_c"], env=dict(os.environ, LD_LIBRARY_PATH=str(prefix / a.libdir)))  # shared
        else:
            out = work / "export"
            run([sys.executable, a.source / "generator" / "export.py", "--tq-codebook", a.build / "codebooks" / "tq-codebook",
                 "--head-dims", a.head_dim, "--bits", f"{a.key_bits},{a.value_bits}", "--out", out])
            # The exported README's commands: a C++ compiler and nothing else.
            run(["sh", out / "build.sh"], cwd=out)
            run(["c++", "-std=c++20", "-O2", *variant_defs(a), f"-I{out / 'runtime' / 'include'}", HERE / "consumer.cpp",
                 out / "libturboquant.a", "-pthread", "-o", work / "consumer"])
            run([work / "consumer"])
    print(f"consumer path '{a.path}': ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
