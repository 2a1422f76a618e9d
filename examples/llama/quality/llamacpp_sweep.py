#!/usr/bin/env python3
"""The peer's side of docs/quality.md: llama.cpp's own quantized KV caches (q8_0, q4_0,
with its flash attention, which quantized V needs) on the same model, text and windows
as `tq-llama perplexity --sweep`, through llama-cpp-python; the reference is llama.cpp
with an FP32 cache.  Same columns: perplexity, its change, mean KL divergence of the
next-token distributions and top-1 agreement against the reference, KV bytes per token.

    pip install numpy llama-cpp-python
    python3 examples/llama/quality/llamacpp_sweep.py --model M.gguf --text FILE --window 512 --windows 40

Tokens are llama.cpp's own tokenization of the text (tq-llama's is identical on the
texts of docs/quality.md; tests/model_test.py checks it on GPL-3).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import llama_cpp
import numpy as np

# ggml type ids and bytes per 32 elements (ggml.h)
CACHE_TYPES = {"f32": (0, 128), "q8_0": (8, 34), "q4_0": (2, 18)}


def log_softmax(rows: np.ndarray) -> np.ndarray:
    rows = rows.astype(np.float64)
    rows -= rows.max(axis=1, keepdims=True)
    return rows - np.log(np.exp(rows).sum(axis=1, keepdims=True))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--text", type=Path, required=True)
    ap.add_argument("--window", type=int, default=512)
    ap.add_argument("--windows", type=int, required=True)
    ap.add_argument("--types", default="f32,q8_0,q4_0", help="the first is the reference")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    types = a.types.split(",")
    models = {t: llama_cpp.Llama(model_path=str(a.model), n_ctx=a.window, n_batch=a.window, n_ubatch=a.window,
                                 logits_all=True, verbose=False, n_threads=a.threads, n_threads_batch=a.threads,
                                 type_k=CACHE_TYPES[t][0], type_v=CACHE_TYPES[t][0], flash_attn=t != "f32")
              for t in types}
    first = models[types[0]]
    tokens = first.tokenize(a.text.read_bytes(), add_bos=False)
    if len(tokens) < a.window * a.windows:
        raise SystemExit(f"{a.text}: {len(tokens)} tokens, fewer than {a.windows} windows of {a.window}")
    meta = first.metadata
    n_layer = int(meta["llama.block_count"])
    kv_dim = int(meta["llama.attention.head_count_kv"]) * int(meta["llama.embedding_length"]) // int(meta["llama.attention.head_count"])

    stats = {t: {"nll": 0.0, "kl": 0.0, "agree": 0, "n": 0} for t in types}
    for w in range(a.windows):
        window = tokens[w * a.window:(w + 1) * a.window]
        target = np.array(window[1:])
        base = None
        for t in types:
            llm = models[t]
            llm.reset()
            llm.eval(window)
            lp = log_softmax(np.array(llm.scores[:a.window - 1], dtype=np.float32))
            s = stats[t]
            s["nll"] -= lp[np.arange(len(target)), target].sum()
            s["n"] += len(target)
            if base is None:
                base = lp
                continue
            s["kl"] += (np.exp(base) * (base - lp)).sum()
            s["agree"] += int((base.argmax(1) == lp.argmax(1)).sum())
        print(f"window {w + 1}/{a.windows}", flush=True, file=sys.stderr)

    print(f"{a.windows} windows of {a.window} tokens ({stats[types[0]]['n']} predictions per config) from {a.text}, "
          f"llama.cpp {llama_cpp.__version__} (llama-cpp-python)\n")
    print("| KV cache | bytes/token | perplexity | vs FP32 | mean KL | top-1 agreement |")
    print("|---|---|---|---|---|---|")
    base_ppl = np.exp(stats[types[0]]["nll"] / stats[types[0]]["n"])
    for i, t in enumerate(types):
        s = stats[t]
        ppl = np.exp(s["nll"] / s["n"])
        per_token = 2 * n_layer * kv_dim // 32 * CACHE_TYPES[t][1]
        name = f"llama.cpp {t}" + ("" if t == "f32" else " (flash attn)")
        if i == 0:
            print(f"| {name} | {per_token} | {ppl:.4f} | | | |")
        else:
            print(f"| {name} | {per_token} | {ppl:.4f} | {100 * (ppl / base_ppl - 1):+.2f}% | {s['kl'] / s['n']:.5f} | "
                  f"{100 * s['agree'] / s['n']:.2f}% |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
