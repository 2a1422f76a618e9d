#!/usr/bin/env python3
"""Seeds for the fuzzers, written from the formats' descriptions at build time (the
tree keeps no binary corpus): small valid .npy files, small GGUF models with a
byte-level BPE and a SentencePiece vocabulary, and call sequences for the C API
in the layout fuzz_c_api.cpp describes.

    make_seeds.py --out DIR    writes DIR/fuzz_npy/*, DIR/fuzz_gguf/*, DIR/fuzz_c_api/*
"""
from __future__ import annotations

import argparse
import struct
from pathlib import Path


def npy(shape: tuple, values: list, dtype: str = "<f4", version: int = 1) -> bytes:
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (dtype, dims)
    prefix = 10 if version == 1 else 12
    header += " " * ((64 - (prefix + len(header) + 1) % 64) % 64) + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    body = struct.pack("<%d%s" % (len(values), "f" if dtype == "<f4" else "e"), *values)
    return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + body


# GGUF value types (gguf.cpp's tags)
U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9


def gguf_string(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_value(kind: int, value) -> bytes:
    if kind == STRING:
        return gguf_string(value)
    if kind == ARRAY:
        item, items = value
        return struct.pack("<IQ", item, len(items)) + b"".join(gguf_value(item, x) for x in items)
    return struct.pack({U32: "<I", I32: "<i", F32: "<f", BOOL: "<?"}[kind], value)


def gguf(metadata: list, tensors: list) -> bytes:
    """metadata: (key, type, value); tensors: (name, shape, ggml type, data bytes)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for key, kind, value in metadata:
        out += gguf_string(key) + struct.pack("<I", kind) + gguf_value(kind, value)
    offset, data = 0, b""
    for name, shape, kind, blob in tensors:
        out += gguf_string(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", n) for n in shape)
        out += struct.pack("<IQ", kind, offset)
        data += blob + b"\0" * (-len(blob) % 32)
        offset = len(data)
    return out + b"\0" * (-len(out) % 32) + data


def tensors() -> list:
    q8_0 = struct.pack("<e", 0.5) + bytes(range(32))  # one block: a half scale, 32 int8
    return [("token_embd.weight", [4, 3], 0, struct.pack("<12f", *range(12))),
            ("output_norm.weight", [4], 1, struct.pack("<4e", 1, 2, 3, 4)),
            ("blk.0.attn_q.weight", [32, 1], 8, q8_0)]


def bpe_model() -> bytes:
    """GPT-2's byte map: printable Latin-1 bytes stand for themselves, the rest for 256 + n."""
    printable = [b for b in range(256) if 33 <= b <= 126 or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    chars, n = [], 0
    for b in range(256):
        if b in printable:
            chars.append(chr(b))
        else:
            chars.append(chr(256 + n))
            n += 1
    merges = ["Ġ t", "h e", "Ġt he", "l l", "o r"]
    vocab = chars + [m.replace(" ", "") for m in merges] + ["<|endoftext|>"]
    return gguf([("general.architecture", STRING, "llama"),
                 ("tokenizer.ggml.model", STRING, "gpt2"),
                 ("tokenizer.ggml.pre", STRING, "smollm"),
                 ("tokenizer.ggml.tokens", ARRAY, (STRING, vocab)),
                 ("tokenizer.ggml.merges", ARRAY, (STRING, merges)),
                 ("tokenizer.ggml.eos_token_id", U32, len(vocab) - 1),
                 ("tokenizer.ggml.bos_token_id", U32, len(vocab) - 1),
                 ("tokenizer.ggml.add_bos_token", BOOL, True)], tensors())


def spm_model() -> bytes:
    pieces = [("<unk>", 2), ("<s>", 3), ("</s>", 3)] + [("<0x%02X>" % b, 6) for b in range(256)]
    pieces += [("▁", 1), ("▁the", 1), ("he", 1), ("▁c", 1), ("at", 1), ("<tool>", 4)]
    return gguf([("general.architecture", STRING, "llama"),
                 ("tokenizer.ggml.model", STRING, "llama"),
                 ("tokenizer.ggml.tokens", ARRAY, (STRING, [p for p, _ in pieces])),
                 ("tokenizer.ggml.scores", ARRAY, (F32, [-float(i) for i in range(len(pieces))])),
                 ("tokenizer.ggml.token_type", ARRAY, (I32, [t for _, t in pieces])),
                 ("tokenizer.ggml.bos_token_id", U32, 1),
                 ("tokenizer.ggml.eos_token_id", U32, 2),
                 ("tokenizer.ggml.add_space_prefix", BOOL, True)], tensors())


def c_api_calls() -> dict[str, bytes]:
    """fuzz_c_api.cpp's layout: head dim, key bits, value bits, six levers, the score
    path, the value sum, a 4-byte seed, the cache (kind, layers, heads, positions), then operations."""
    def config(levers: bytes, cache: bytes) -> bytes:  # cache: kind, then layers - 1, heads - 1, positions - 1
        return bytes([0, 1, 0]) + levers + struct.pack("<I", 42) + cache

    def quantize(pos: int, key: bool) -> bytes:  # opcode, state, layer + 1, pos + 1, vector (Gaussian, seed, scale)
        return bytes([0 if key else 1, 0, 1, pos + 1, 0, pos, 20])

    def attention(pos: int) -> bytes:  # ..., query heads, q, k, v, softmax scale (1/sqrt(d))
        return bytes([2, 0, 1, pos + 1, 0]) + bytes([0, pos, 20]) * 3 + bytes([1])

    def decode() -> bytes:  # dequantize keys of positions 0..2
        return bytes([3, 0, 1, 1, 4, 1])

    def evict(n: int) -> bytes:
        return bytes([4, 0, 1, 1, n + 1])

    def batch(pos: int, n: int) -> bytes:  # ..., query heads, n_tokens + 1, q, k, v, softmax scale
        return bytes([8, 0, 1, pos + 1, 0, n + 1]) + bytes([0, pos, 20]) * 3 + bytes([1])

    def threads(kind: int) -> bytes:  # the executor: kind 0..3 a pool of 1..4 threads, 129 an engine's parallel-for
        return bytes([7, 0, 1, 1, kind])

    def state(how: int, at: int) -> bytes:  # serialize, then read back: how < 64 as written, < 192 a bit flipped at `at`
        return bytes([9, 0, 1, 1, how]) + struct.pack("<I", at)

    defaults = bytes(8)                   # every lever, the score path and the value sum at their defaults
    levers = bytes([1, 2, 4, 3, 3, 2, 2, 2])  # norm scales, float scales, centered keys and values, block 16, 1 sink,
    #                                           smoothed, integer scores (requantized per block of positions), integer value sums
    linear = b"".join(attention(p) for p in range(4)) + decode() + evict(2) + attention(2)
    ring = b"".join(quantize(p, True) + quantize(p, False) for p in range(20)) + decode()
    one_layer = bytes([0, 0, 0, 15])
    return {"linear": config(defaults, one_layer) + linear, "levers": config(levers, one_layer) + linear,
            "ring": config(defaults, bytes([4, 0, 0, 15])) + ring,
            "layers": config(defaults, bytes([6, 1, 1, 15, 0])) + linear,  # two layers (the last on another seed), linear
            "threads": config(defaults, bytes([0, 0, 2, 15])) + threads(2) + linear + threads(129) + linear,  # 3 KV heads
            "batch": config(defaults, one_layer) + batch(0, 5) + batch(5, 3) + decode() + batch(2, 6),
            "ring_batch": config(defaults, bytes([4, 0, 0, 7])) + batch(0, 6) + batch(6, 6),  # wraps 8 slots
            "state": config(levers, one_layer) + linear + state(0, 0) + state(100, 200) + attention(3)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    out = ap.parse_args().out
    seeds = {
        "fuzz_npy": {"f4-3d": npy((2, 3, 4), [i / 8 for i in range(24)]), "f2": npy((1, 2, 8), [i / 4 for i in range(16)], "<f2"),
                     "v2-1d": npy((5,), [1, 2, 3, 4, 5], version=2), "scalar": npy((), [7])},
        "fuzz_gguf": {"bpe.gguf": bpe_model(), "spm.gguf": spm_model()},
        "fuzz_c_api": c_api_calls(),
    }
    for fuzzer, files in seeds.items():
        (out / fuzzer).mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (out / fuzzer / name).write_bytes(data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
