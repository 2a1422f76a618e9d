#!/usr/bin/env python3
"""Every generated file's banner says how to reproduce it ("// Reproduce: python3
generator/generate.py ... --out-dir <dir>").  For one file of each group and ISA
folder of the checked-in generated/, run that command as written into a scratch
folder and require the same file, byte for byte: a reader who copies the line gets
the kernel they are reading.  A codebook's command reads tq-codebook's JSON
("<tq-codebook json dir>"): the test writes it with --tq-codebook first."""
from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "// Reproduce: "


def reproduce_line(path: Path) -> str | None:
    with path.open(encoding="utf-8") as f:
        for _, line in zip(range(4), f):
            if line.startswith(PREFIX):
                return line[len(PREFIX):].strip()
    return None


def codebook_json(tq_codebook: str, args: list[str], folder: Path) -> None:
    """tq-codebook's JSON for the head dims and bits of a codebook command, into folder."""
    value = lambda flag: args[args.index(flag) + 1].split(",")
    for d in value("--head-dims"):
        for b in value("--bits"):
            subprocess.run([tq_codebook, "--head-dim", d, "--bits", b, "--format", "json",
                            "--output", str(folder / f"codebook-d{d}-b{b}.json")], check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tq-codebook", required=True)
    a = ap.parse_args()
    samples: dict[tuple[str, str], Path] = {}
    for path in sorted((ROOT / "generated").rglob("*")):
        if not path.is_file():
            continue
        line = reproduce_line(path)
        if line is None:
            print(f"{path.relative_to(ROOT)}: no Reproduce line in its banner")
            return 1
        args = shlex.split(line)
        group = args[args.index("--group") + 1]
        samples.setdefault((str(path.parent.relative_to(ROOT)), group), path)
    failures = 0
    for (folder, group), path in sorted(samples.items()):
        line = reproduce_line(path)
        with tempfile.TemporaryDirectory() as out, tempfile.TemporaryDirectory() as json_dir:
            args = shlex.split(line.replace("<tq-codebook json dir>", json_dir))
            assert args[0] == "python3" and args[-1] == "<dir>", args
            if json_dir in args:
                codebook_json(a.tq_codebook, args, Path(json_dir))
            run = subprocess.run([sys.executable, *args[1:-1], out], cwd=ROOT, capture_output=True, text=True)
            made = Path(out) / path.relative_to(ROOT / "generated")
            if run.returncode != 0:
                print(f"FAIL {path.relative_to(ROOT)}: its Reproduce command exited {run.returncode}:\n{run.stderr}")
                failures += 1
            elif not made.is_file() or made.read_bytes() != path.read_bytes():
                print(f"FAIL {path.relative_to(ROOT)}: its Reproduce command wrote {'another file' if made.is_file() else 'no such file'}")
                failures += 1
            else:
                print(f"ok   {path.relative_to(ROOT)} ({group})")
    print(f"{len(samples) - failures} of {len(samples)} groups reproduce their files")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
