#!/usr/bin/env python3
"""TurboQuant kernel generator: variants × templates → C++ sources.

    generate.py --head-dims 64,128 --bits 2,4 --codebook-dir CB --out-dir OUT
        renders every file (or only --group G, repeatable) into OUT, writing a
        file only when its content changes.
    generate.py --head-dims 64,128 --bits 2,4 --out-dir OUT --list-outputs FILE.cmake
        writes, for CMake at configure time, each group's outputs and the
        templates it depends on; renders nothing.
    generate.py --head-dims ... --bits ... --isas ... --tq-codebook PATH --check DIR
        renders every file into a temporary folder (running tq-codebook for the
        codebooks) and fails, listing the files, on any difference from DIR (the
        checked-in generated/: CTest's generated_in_sync);
    generate.py ... --tq-codebook PATH --sync DIR
        rewrites DIR from scratch likewise (the CMake target update-generated).
    generate.py --isa-table FILE.cmake --processor P
        writes the ISA table (isas.py: names, flags) for CMake, with the ISAs a
        build for processor P (CMAKE_SYSTEM_PROCESSOR) generates by default.

CB holds tq-codebook's JSON, one `codebook-d<D>-b<B>.json` per (head dim, bits).
"""
from __future__ import annotations

import argparse
import filecmp
import json
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from environment import make_environment, referenced_templates, TEMPLATES_DIR
from layout import Rate
import isas
from variants import Config, Output, groups, outputs, ISAS

GENERATOR_DIR = Path(__file__).resolve().parent


def int_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.replace(";", ",").split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got '{text}'")


def rate_list(text: str) -> tuple[Rate, ...]:
    try:
        return tuple(sorted({Rate.parse(x.strip()) for x in text.replace(";", ",").split(",") if x.strip()}))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def name_list(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.replace(";", ",").split(",") if x.strip())


def load_codebook(codebook_dir: Path, d: int, b: int) -> dict:
    path = codebook_dir / f"codebook-d{d}-b{b}.json"
    try:
        cb = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"generate.py: cannot read codebook {path}: {e}")
    levels = 1 << b
    if (cb.get("head_dim"), cb.get("bits")) != (d, b) or len(cb.get("centroids", [])) != levels \
            or len(cb.get("boundaries", [])) != levels - 1:
        raise SystemExit(f"generate.py: codebook {path} does not describe head_dim {d}, bits {b}")
    # The encode kernels quantize |u| over the upper halves and mirror (docs/packed-format.md):
    # that needs c_i = -c_{L-1-i} and b_i = -b_{L-2-i} exactly, which tq-codebook guarantees.
    c, bounds = cb["centroids"], cb["boundaries"]
    if any(c[i] != -c[levels - 1 - i] for i in range(levels)) or \
            any(bounds[i] != -bounds[levels - 2 - i] for i in range(levels - 1)):
        raise SystemExit(f"generate.py: codebook {path} is not symmetric about 0")
    return cb


def render(env, out: Output, codebook_dir: Path | None) -> str:
    ctx = dict(out.context)
    if out.group == "codebook":
        if codebook_dir is None:
            raise SystemExit("generate.py: --codebook-dir is required to render codebooks")
        ctx["codebook"] = load_codebook(codebook_dir, ctx["head_dim"], ctx["bits"])
    banner = dict(template=f"templates/{out.template}", path=out.path,
                  command=f"python3 generator/generate.py --group {out.group} {out.args}")
    return env.get_template(out.template).render(banner=banner, **ctx)


def write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def cmake_list(items) -> str:
    return ";".join(str(i).replace("\\", "/") for i in items)


def list_outputs(env, outs: list[Output], codebook_bits: list[int], out_dir: Path, cmake_file: Path) -> None:
    generator_sources = sorted(str(p) for p in GENERATOR_DIR.glob("*.py") if p.name != "export.py")
    lines = ["# Written by generator/generate.py --list-outputs; do not edit.",
             f'set(TQ_GENERATOR_SOURCES "{cmake_list(generator_sources)}")',
             f'set(TQ_GENERATED_GROUPS "{cmake_list(groups(outs))}")',
             f'set(TQ_CODEBOOK_BITS "{cmake_list(codebook_bits)}")']
    for g in groups(outs):
        members = [o for o in outs if o.group == g]
        templates = sorted({t for o in members for t in referenced_templates(env, o.template)})
        lines.append(f'set(TQ_GENERATED_{g}_OUTPUTS "{cmake_list(out_dir / o.path for o in members)}")')
        lines.append(f'set(TQ_GENERATED_{g}_TEMPLATES "{cmake_list(TEMPLATES_DIR / t for t in templates)}")')
    for isa in sorted({o.path.split("/")[0] for o in outs if o.path.endswith(".cpp")}):
        sources = [out_dir / o.path for o in outs if o.path.startswith(isa + "/") and o.path.endswith(".cpp")]
        lines.append(f'set(TQ_GENERATED_SOURCES_{isa} "{cmake_list(sources)}")')
    write_if_changed(cmake_file, "\n".join(lines) + "\n")


def generate_with_codebooks(tq_codebook: str, cfg: Config, out_dir: Path) -> None:
    """Every file of cfg into out_dir, running tq_codebook for the codebooks it
    needs (the build does the same in CMake, one command per file)."""
    json_dir = out_dir.parent / f"{out_dir.name}-codebook-json"
    json_dir.mkdir(parents=True, exist_ok=True)
    for d in cfg.head_dims:
        for b in cfg.codebook_bits():
            subprocess.run([tq_codebook, "--head-dim", str(d), "--bits", str(b), "--format", "json",
                            "--output", str(json_dir / f"codebook-d{d}-b{b}.json")], check=True)
    env = make_environment()
    for out in outputs(cfg):
        write_if_changed(out_dir / out.path, render(env, out, json_dir))


def differences(expected: Path, actual: Path) -> list[str]:
    """What makes folder `actual` differ from `expected`, file by file."""
    files = lambda root: {p.relative_to(root) for p in root.rglob("*") if p.is_file()}
    want, have = files(expected), files(actual)
    out = [f"missing from {actual.name}/: {p}" for p in sorted(want - have)]
    out += [f"not produced by the generator: {p}" for p in sorted(have - want)]
    out += [f"differs: {p}" for p in sorted(want & have) if not filecmp.cmp(expected / p, actual / p, shallow=False)]
    return out


def check_or_sync(tq_codebook: str, cfg: Config, checked_in: Path, sync: bool) -> int:
    """--check / --sync: the checked-in folder against a fresh rendering of cfg."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "generated"
        generate_with_codebooks(tq_codebook, cfg, fresh)
        if sync:
            shutil.rmtree(checked_in, ignore_errors=True)
            shutil.copytree(fresh, checked_in)
            print(f"wrote {checked_in}")
            return 0
        diff = differences(fresh, checked_in)
    if diff:
        print(f"{checked_in} is out of date; run `cmake --build <build> --target update-generated`:")
        print("\n".join("  " + line for line in diff))
        return 1
    print(f"{checked_in} matches the generator's output for these variants")
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--head-dims", type=int_list, help="e.g. 64,128,256 (required but with --isa-table)")
    ap.add_argument("--bits", type=rate_list, default=(),
                    help="bit rates in 1..8, whole or in steps of 1/8 (e.g. 2,3,3.5,4)")
    ap.add_argument("--isas", type=name_list, default=isas.for_this_machine(),
                    help=f"subset of {','.join(ISAS)} (default: this machine's, {','.join(isas.for_this_machine())})")
    ap.add_argument("--score-accumulators", type=int, default=2,
                    help="tuning: partial sums per key in the SIMD score kernels (1, 2, 4, 8; default 2)")
    ap.add_argument("--out-dir", type=Path, help="where to render (every mode but --check and --sync)")
    ap.add_argument("--codebook-dir", type=Path, help="folder of tq-codebook JSON files")
    ap.add_argument("--group", action="append", help="render only this group (repeatable)")
    ap.add_argument("--list-outputs", type=Path, metavar="FILE", help="write the CMake output list and exit")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", type=Path, metavar="DIR", help="compare DIR with a fresh rendering; 1 if they differ")
    mode.add_argument("--sync", type=Path, metavar="DIR", help="rewrite DIR with a fresh rendering")
    ap.add_argument("--tq-codebook", help="the tq-codebook tool, for --check and --sync")
    ap.add_argument("--isa-table", type=Path, metavar="FILE", help="write the ISA table for CMake and exit")
    ap.add_argument("--processor", default=platform.machine(), help="with --isa-table: the target processor "
                    "(default: this machine's)")
    args = ap.parse_args(argv)
    if args.isa_table:
        write_if_changed(args.isa_table, isas.cmake_table(args.processor))
        return 0
    if args.head_dims is None:
        ap.error("--head-dims is required")
    if (args.check or args.sync) and not args.tq_codebook:
        ap.error("--check and --sync need --tq-codebook")
    if not (args.check or args.sync) and not args.out_dir:
        ap.error("--out-dir is required")

    try:
        cfg = Config(head_dims=args.head_dims, bits=args.bits, isas=args.isas,
                     score_accumulators=args.score_accumulators)
    except ValueError as e:
        ap.error(str(e))
    if args.check or args.sync:
        return check_or_sync(args.tq_codebook, cfg, (args.check or args.sync).resolve(), bool(args.sync))
    env = make_environment()
    outs = outputs(cfg)
    if args.list_outputs:
        list_outputs(env, outs, cfg.codebook_bits(), args.out_dir.resolve(), args.list_outputs)
        return 0
    wanted = set(args.group or groups(outs))
    unknown = wanted - set(groups(outs))
    if unknown:
        ap.error(f"unknown group(s) {', '.join(sorted(unknown))}; groups: {', '.join(groups(outs))}")
    for out in outs:
        if out.group in wanted:
            write_if_changed(args.out_dir / out.path, render(env, out, args.codebook_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
