#!/usr/bin/env python3
"""tq-llama, the example engine (examples/llama): bad command lines and bad model files
get one clear line and a non-zero exit (no model needed).  The caches' quality on real
models is llama.cpp's to measure (integrations/llama.cpp/tests/llamacpp_test.py).
"""
from __future__ import annotations

import argparse
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
from make_hostile_gguf import HOSTILE, u8_array_gguf  # noqa: E402  (the crafted GGUF files)
failures: list[str] = []


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600)


def expect_error(cmd: list, needle: str, rc: int) -> None:
    r = run(cmd)
    first = (r.stderr.strip().splitlines() or [""])[0]
    if r.returncode != rc or needle not in first:
        failures.append(f"{' '.join(map(str, cmd[1:]))}: expected rc {rc} and '{needle}' on the first line, got rc={r.returncode} '{first}'")


def peak_rss_mb(cmd: list) -> float:
    """The peak resident memory of cmd, in MB (its own process tree, measured by a fresh Python)."""
    probe = "import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True); " \
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    return int(run([sys.executable, "-c", probe, *cmd]).stdout) / 1024


def check_hostile_files(tq_llama: str, tmp: Path, text: Path) -> None:
    """Crafted GGUF files (issue 13; tests/fixtures/make_hostile_gguf.py says what each is):
    a clear line, no out-of-bounds read, no memory blow-up."""
    tokenize = lambda path: [tq_llama, "tokenize", "--model", path, "--text", text]
    expect_error(tokenize(HOSTILE / "wrap.gguf"), "x: data past the end", 1)
    expect_error(tokenize(HOSTILE / "name.gguf"), "a\\x0Abccc", 1)
    r = run(tokenize(HOSTILE / "name.gguf"))
    if len(r.stderr.splitlines()) != 1 or len(r.stderr) > 300:
        failures.append(f"name.gguf: expected one short line, got {len(r.stderr)} characters")
    expect_error(tokenize(HOSTILE / "align.gguf"), "alignment 48 is not a power of two", 1)
    expect_error(tokenize(HOSTILE / "count.gguf"), "array of 1099511627776 items runs past the end", 1)
    expect_error(tokenize(HOSTILE / "entries.gguf"), "truncated: 1125899906842624 metadata entries", 1)
    # 16 MB: one u8 array of 16M items.  It costs no memory beyond the file's (was 40 bytes an item).
    (tmp / "bytes.gguf").write_bytes(u8_array_gguf(16 << 20))
    expect_error(tokenize(tmp / "bytes.gguf"), "no metadata tokenizer.ggml.model", 1)
    if (peak := peak_rss_mb(tokenize(tmp / "bytes.gguf"))) > 100:
        failures.append(f"bytes.gguf: 16 MB of metadata took {peak:.0f} MB")
    (tmp / "bytes.gguf").unlink()
    r = run(tokenize(HOSTILE / "kind.gguf"))
    if r.returncode != 1 or r.stderr.count("\n") != 1 or "tokenizer x\\x0Ayyy" not in r.stderr or len(r.stderr) > 300:
        failures.append(f"kind.gguf: expected one short line naming the tokenizer, got {r.stderr[:200]!r}")
    (tmp / "hi.txt").write_text("hi!")
    expect_error([tq_llama, "tokenize", "--model", HOSTILE / "vocab.gguf", "--text", tmp / "hi.txt"],
                 "the vocabulary has no token for byte 0x21", 1)


def check_arguments(tq_llama: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        text = tmp / "text.txt"
        text.write_text("hello world\n")
        (tmp / "not.gguf").write_bytes(b"this is not a model")
        # a GGUF header that promises 5 tensors and 3 metadata entries, then ends
        (tmp / "truncated.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 5, 3) + struct.pack("<Q", 100) + b"general.")
        (tmp / "v9.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 9, 0, 0))
        # one tensor whose shape multiplies past 2^64
        (tmp / "huge.gguf").write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + struct.pack("<Q", 1) + b"x" +
                                        struct.pack("<IQQIQ", 2, 1 << 40, 1 << 40, 0, 0))
        m = ["--model", tmp / "not.gguf"]
        expect_error([tq_llama], "no command", 2)
        expect_error([tq_llama, "train", *m], "unknown command 'train'", 2)
        expect_error([tq_llama, "generate", "--prompt", "hi"], "--model is required", 2)
        expect_error([tq_llama, "generate", *m], "give one of --prompt and --prompt-file", 2)
        expect_error([tq_llama, "generate", *m, "--prompt", "hi", "--tokens", "0"], "--tokens: expected an integer >= 1", 2)
        expect_error([tq_llama, "generate", *m, "--prompt", "hi", "--kv-cache", "fp16"], "expected fp32, tq, K/V[:levers], q8_0", 2)
        expect_error([tq_llama, "generate", *m, "--prompt", "hi", "--kv-cache", "4/4:zz"], "unknown lever 'zz'", 2)
        expect_error([tq_llama, "generate", *m, "--prompt", "hi", "--kv-cache", "4/4", "--k-bits", "4"], "need --kv-cache tq", 2)
        expect_error([tq_llama, "generate", *m, "--prompt", "hi", "--kv-cache", "q3_0"], "got 'q3_0'", 2)
        expect_error([tq_llama, "generate", *m, "--prompt", "hi", "--kv-cache", "q4_0-rot"], "-norot for no rotation; got 'q4_0-rot'", 2)
        expect_error([tq_llama, "generate", *m, "--prompt", "hi", "--kv-cache", "q4_0", "--k-bits", "4"], "need --kv-cache tq", 2)
        expect_error([tq_llama, "perplexity", *m, "--text", text, "--sweep", "q4_0,q3_0"], "or a ggml type", 2)
        expect_error([tq_llama, "perplexity", *m, "--text", text, "--sweep", "q4_0-norot-norot"], "got 'q4_0-norot-norot'", 2)
        expect_error([tq_llama, "perplexity", *m, "--text", text, "--sweep", "q8_0", "--kv-cache", "q8_0"], "drop --kv-cache", 2)
        expect_error([tq_llama, "generate", *m, "--prompt", "hi", "--k-bits", "4"], "need --kv-cache tq", 2)
        expect_error([tq_llama, "generate", *m, "--prompt", "hi", "--kv-cache", "tq", "--k-bits", "3.3"], "steps of 1/8", 2)
        expect_error([tq_llama, "generate", *m, "--prompt", "hi", "--kv-cache", "tq", "--v-bits", "nan"], "steps of 1/8", 2)
        expect_error([tq_llama, "generate", *m, "--prompt", "hi", "--kv-cache", "tq", "--k-bits", "9"], "steps of 1/8", 2)
        expect_error([tq_llama, "perplexity", *m, "--text", text, "--sweep", "4"], "expected K/V items", 2)
        expect_error([tq_llama, "perplexity", *m, "--text", text, "--sweep", "4/2", "--kv-cache", "tq"], "drop --kv-cache", 2)
        expect_error([tq_llama, "perplexity", *m], "--text is required", 2)
        expect_error([tq_llama, "generate", *m, "--prompt", "hi", "--threads"], "--threads: missing value", 2)
        expect_error([tq_llama, "tokenize", "--model", tmp / "missing.gguf", "--text", text], "cannot open", 1)
        expect_error([tq_llama, "tokenize", *m, "--text", text], "bad magic", 1)
        expect_error([tq_llama, "tokenize", "--model", tmp / "truncated.gguf", "--text", text], "truncated", 1)
        expect_error([tq_llama, "tokenize", "--model", tmp / "v9.gguf", "--text", text], "version 9", 1)
        expect_error([tq_llama, "tokenize", "--model", tmp / "huge.gguf", "--text", text], "x: implausible shape", 1)
        check_hostile_files(tq_llama, tmp, text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["arguments"])
    ap.add_argument("--tq-llama", required=True)
    a = ap.parse_args()
    check_arguments(a.tq_llama)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
