#!/usr/bin/env python3
"""Command-line contracts of tq-codebook, tq and the generator: valid calls
succeed with the documented output, bad ones exit non-zero with one clear line."""
from __future__ import annotations

import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
from pathlib import Path


failures: list[str] = []


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def expect_error(cmd: list[str], needle: str) -> None:
    r = run(cmd)
    first = (r.stderr.strip().splitlines() or [""])[0]
    if r.returncode == 0 or needle not in r.stderr:
        failures.append(f"{' '.join(cmd)}: expected failure mentioning '{needle}', got rc={r.returncode} '{first}'")


def expect_one_line_error(cmd: list[str], needle: str, max_length: int = 400) -> None:
    """A failure whose whole message is one printable line of at most max_length characters."""
    r = run(cmd)
    lines = r.stderr.splitlines()
    if r.returncode == 0 or len(lines) != 1 or needle not in lines[0] or len(lines[0]) > max_length or not lines[0].isprintable():
        failures.append(f"{' '.join(cmd)}: expected one printable line mentioning '{needle}', got rc={r.returncode} {r.stderr[:200]!r}")


def save_npy(path: str, shape: tuple, data: list, dtype: str = "<f4", truncate: int = 0) -> None:
    """A .npy file written from the format's description (no NumPy needed)."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (dtype, ", ".join(map(str, shape)) + ("," if len(shape) == 1 else ""))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    body = struct.pack({"<f2": "<%de", "<f8": "<%dd"}.get(dtype, "<%df") % len(data), *data)
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + body[:len(body) - truncate])


def check_eval(tq: str, head_dim: int, bits: float, tmp: str) -> None:
    rng = random.Random(1)
    tokens, heads = 64, 2
    values = [rng.gauss(0, 1) for _ in range(tokens * heads * head_dim)]
    keys = [rng.gauss(0, 1) for _ in range(tokens * heads * head_dim)]
    path = lambda name: f"{tmp}/{name}.npy"
    save_npy(path("k"), (tokens, heads, head_dim), keys)
    save_npy(path("v16"), (tokens, heads, head_dim), values, "<f2")
    save_npy(path("q"), (3, 2 * heads, head_dim), keys[: 3 * 2 * heads * head_dim])
    r = run([tq, "eval", "--keys", path("k"), "--values", path("v16"), "--queries", path("q"), "--k-bits", str(bits),
             "--v-bits", str(bits), "--json"])
    try:
        configs = json.loads(r.stdout)["configs"]
        if len(configs) != 1 or not all(0.5 < c["attention_cosine_mean"] <= 1 and 0 < c["key_mse"] < 0.5 for c in configs):
            failures.append(f"tq eval --json: implausible figures {configs}")
    except (ValueError, KeyError):
        failures.append(f"tq eval --json: rc={r.returncode}, not the documented JSON: {r.stderr.strip()}")
    save_npy(path("f8"), (tokens, heads, head_dim), values, "<f8")
    save_npy(path("cut"), (tokens, heads, head_dim), values, truncate=5)
    save_npy(path("flat"), (tokens * heads, head_dim), values)
    save_npy(path("short"), (tokens - 1, heads, head_dim), values[: (tokens - 1) * heads * head_dim])
    save_npy(path("nan"), (tokens, heads, head_dim), [float("nan")] + values[1:])
    save_npy(path("hostile"), (tokens, heads, head_dim), values, "x\ny\0" + "z" * 9000)  # newline, NUL, 9k characters
    save_npy(path("nuls"), (tokens, heads, head_dim), values, "\0" * 64)  # every byte escaped: 4 characters each
    with open(path("text"), "w") as f:
        f.write("not numpy")
    base = [tq, "eval", "--keys", path("k"), "--values"]
    expect_error(base + [path("f8")], "dtype '<f8'")
    expect_one_line_error(base + [path("hostile")], "dtype 'x\\x0Ay\\x00zzzz")
    # the dtype shows as at most 40 characters of output, however many bytes it escapes
    expect_one_line_error(base + [path("nuls")], "dtype '\\x00\\x00", len(path("nuls")) + 140)
    expect_error(base + [path("cut")], "(truncated)")
    expect_error(base + [path("flat")], "shape must be [tokens, heads, head_dim]")
    expect_error(base + [path("short")], "keys and values differ in shape")
    expect_error(base + [path("nan")], "holds NaN or Inf")
    expect_error(base + [path("text")], "not a .npy file")
    expect_error(base + [path("missing")], "cannot open")
    expect_error(base + [path("v16"), "--k-bits", "4"], "give both --k-bits and --v-bits")
    expect_error(base + [path("v16"), "--k-bits", "4", "--v-bits", "3.3"], "steps of 1/8")


def check_isa_cap(tq: str) -> None:
    """TQ_MAX_ISA: no ISA above the cap runs here or is picked; an invalid cap is refused."""
    def tq_list(cap: str | None, *flags: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k != "TQ_MAX_ISA"}
        return subprocess.run([tq, "list", *flags], capture_output=True, text=True, timeout=120,
                              env=env if cap is None else {**env, "TQ_MAX_ISA": cap})

    isas = json.loads(tq_list(None, "--json").stdout)["isas"]
    order = [i["name"] for i in isas]  # best first
    runs = {i["name"]: i["runs_here"] for i in isas}
    for cap in order[1:]:
        listing = json.loads(tq_list(cap, "--json").stdout)
        got = {i["name"]: i["runs_here"] for i in listing["isas"]}
        want = {isa: runs[isa] and order.index(isa) >= order.index(cap) for isa in order}
        if got != want or listing["max_isa"] != cap or order.index(listing["picked_isa"]) < order.index(cap):
            failures.append(f"TQ_MAX_ISA={cap} tq list --json: runs_here {got}, picked {listing['picked_isa']}, "
                            f"max_isa {listing['max_isa']}; want runs_here {want}")
    capped = tq_list("scalar").stdout
    for isa in (i for i in order if runs[i] and i != "scalar"):
        if f"{isa} (compiled, not run here)" not in capped:
            failures.append(f"TQ_MAX_ISA=scalar tq list: {isa} not shown as compiled, not run here")
    r = tq_list("avx3")
    if r.returncode == 0 or f"TQ_MAX_ISA=avx3 is not an ISA (known: {', '.join(order)})" not in r.stderr:
        failures.append(f"TQ_MAX_ISA=avx3 tq list: expected a refusal, got rc={r.returncode} '{r.stderr.strip()}'")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tq-codebook", required=True)
    ap.add_argument("--tq", required=True)
    ap.add_argument("--generator", required=True)
    ap.add_argument("--cross", action="store_true", help="tq runs on another machine (a cross build's emulator)")
    a = ap.parse_args()

    r = run([a.tq_codebook, "--head-dim", "128", "--bits", "3"])
    cb = json.loads(r.stdout)
    for key in ("head_dim", "bits", "centroids", "boundaries", "mse_per_coordinate", "mse_unit_vector", "iterations"):
        if key not in cb:
            failures.append(f"tq-codebook JSON lacks '{key}'")
    if len(cb["centroids"]) != 8 or len(cb["boundaries"]) != 7 or cb["centroids"] != sorted(cb["centroids"]):
        failures.append("tq-codebook JSON: wrong centroid/boundary counts or order")
    if "mse_unit_vector" not in run([a.tq_codebook, "--head-dim", "64", "--bits", "2", "--format", "text"]).stdout:
        failures.append("tq-codebook --format text lacks mse_unit_vector")

    expect_error([a.tq_codebook, "--head-dim", "7", "--bits", "2"], "head_dim must be in [8, 1024]")
    expect_error([a.tq_codebook, "--head-dim", "128", "--bits", "9"], "bits must be in [1, 8]")
    expect_error([a.tq_codebook, "--head-dim", "abc", "--bits", "2"], "needs an integer")
    expect_error([a.tq_codebook, "--bits", "2"], "--head-dim is required")
    expect_error([a.tq_codebook, "--head-dim", "64", "--bits", "2", "--format", "xml"], "--format must be json or text")
    expect_error([a.tq_codebook, "--head-dim", "64", "--bits", "2", "--what", "x"], "unknown argument")
    expect_error([a.tq, "frobnicate"], "unknown command")
    expect_error([a.tq, "demo", "--vectors", "-3"], "usage: tq demo")

    # tq list / codebook / show: --help, JSON that parses, the kernels they name exist.
    for sub in ("demo", "list", "codebook", "show", "bench", "eval"):
        r = run([a.tq, sub, "--help"])
        if r.returncode or f"usage: tq {sub}" not in r.stdout:
            failures.append(f"tq {sub} --help: rc={r.returncode}")
    listing = json.loads(run([a.tq, "list", "--json"]).stdout)
    kernels = listing["kernels"]
    if not kernels or not any(k["picked"] for k in kernels) or listing["picked_isa"] not in {i["name"] for i in listing["isas"]}:
        failures.append("tq list --json: no kernels, or none picked")
    for k in kernels[:: max(1, len(kernels) // 25)]:  # a sample of every kind
        r = run([a.tq, "show", k["name"]])
        if r.returncode or f"Variant:   {k['name']}" not in r.stdout and k["kernel"] not in ("unrotate", "unpack"):
            failures.append(f"tq show {k['name']}: rc={r.returncode} or no banner naming it")
    cb_tq = json.loads(run([a.tq, "codebook", "--head-dim", "128", "--bits", "3", "--json"]).stdout)
    # The same solver: bit for bit on one machine; in a cross build tq runs on another
    # whose libm may round its last bits otherwise (aarch64's does), so there the two
    # agree to the solver's tolerance (kTolerance, 1e-12 on max |delta centroid|).
    tolerance = 1e-12 if a.cross else 0
    if len(cb_tq["centroids"]) != len(cb["centroids"]) or \
            max(abs(x - y) for x, y in zip(cb_tq["centroids"], cb["centroids"])) > tolerance:
        failures.append(f"tq codebook --json differs from tq-codebook: {cb_tq['centroids']} vs {cb['centroids']}")
    expect_error([a.tq, "codebook", "--head-dim", "128"], "--head-dim and --bits are required")
    expect_error([a.tq, "codebook", "--head-dim", "128", "--bits", "9"], "--bits needs an integer in [1, 8]")
    expect_error([a.tq, "list", "--frob"], "unknown option '--frob'")
    expect_error([a.tq, "show"], "which kernel?")
    expect_error([a.tq, "show", "tq_nothing"], "not compiled into this build")
    expect_error([a.tq, "show", "tq_score_d72_b3__avx512"], "not compiled into this build")
    runs_here = {i["name"] for i in listing["isas"] if i["runs_here"]}
    score = next(k for k in kernels if k["kernel"] == "score" and k["isa"] in runs_here)
    r = run([a.tq, "bench", score["name"], "--seconds", "0.001", "--json"])
    try:
        rows = json.loads(r.stdout)
        if len(rows) != 1 or not all(rows[0][f] > 0 for f in ("rotate_ns", "encode_ns", "score_ns_per_key", "fp32_dot_ns_per_key")):
            failures.append(f"tq bench --json: implausible {rows}")
    except ValueError:
        failures.append(f"tq bench --json: rc={r.returncode}, not JSON: {r.stderr.strip()}")
    rotation = next(k for k in kernels if k["kernel"] == "rotate")
    expect_error([a.tq, "bench", rotation["name"]], "is not a per-bits kernel")
    expect_error([a.tq, "bench", "--seconds", "0"], "--seconds must be in (0, 10]")
    expect_error([a.tq, "bench", "--isa", "sve"], "is not in this build or does not run here")
    expect_error([a.tq, "bench", "tq_score_d72_b3__scalar"], "not compiled into this build")
    not_here = next((k for k in kernels if k["kernel"] == "score" and k["isa"] not in runs_here), None)
    if not_here:  # compiled, but this CPU (or TQ_MAX_ISA) does not run it
        expect_error([a.tq, "bench", not_here["name"]], "does not run here")
    check_isa_cap(a.tq)
    with tempfile.TemporaryDirectory() as tmp:
        first = next(k for k in kernels if k["bits"] is not None)
        check_eval(a.tq, first["head_dim"], first["bits"], tmp)

    with tempfile.TemporaryDirectory() as tmp:
        gen = [sys.executable, a.generator, "--out-dir", tmp]
        expect_error(gen + ["--head-dims", "100", "--bits", "2"], "head dim 100 is not supported")
        expect_error(gen + ["--head-dims", "64", "--bits", "9"], "bit rate 9 is not supported")
        expect_error(gen + ["--head-dims", "64", "--bits", "3.3"], "in steps of 1/8")
        expect_error(gen + ["--head-dims", "72", "--bits", "2"], "nearest supported: 64, 80")
        expect_error(gen + ["--head-dims", "144", "--bits", "2"], "not m·2^k")
        expect_error(gen + ["--head-dims", "80", "--bits", "3.25"], "fractions allowed at head dim 80: +4/8")
        expect_error(gen + ["--head-dims", "64", "--bits", "2", "--isas", "sve"], "ISA 'sve' is not supported")
        expect_error(gen + ["--head-dims", "64", "--bits", "2", "--group", "nope"], "unknown group")
        expect_error(gen + ["--head-dims", "64", "--bits", "2", "--group", "codebook"], "--codebook-dir is required")

    for f in failures:
        print("FAIL:", f)
    print(f"{'ok' if not failures else 'FAILED'}: command-line contracts ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
