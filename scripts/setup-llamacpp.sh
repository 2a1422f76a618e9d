#!/usr/bin/env bash
# Fetches llama.cpp's sources, pinned by hash in scripts/llamacpp-requirements.txt (the
# source distribution of llama-cpp-python, which vendors them), into .llamacpp/ (or
# $TQ_LLAMACPP_DIR) with the Python packages of llama.cpp's server test suite, and prints
# the llama.cpp tree's path.  Used to make test fixtures
# from ggml's own code (tests/fixtures/make_ggml_blocks.py --ggml-src).  Network is
# needed here only.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${TQ_LLAMACPP_DIR:-.llamacpp}"
tree="$dir/llama_cpp_python-0.3.36/vendor/llama.cpp"
if [ ! -f "$tree/ggml/src/ggml-quants.c" ]; then
  mkdir -p "$dir"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    --require-hashes -r scripts/llamacpp-requirements.txt -d "$dir"
  tar -xzf "$dir/llama_cpp_python-0.3.36.tar.gz" -C "$dir"
fi
# The Python packages of llama.cpp's server test suite (llama.cpp/suite), pinned by hash.
deps="$dir/server-tests"
if [ ! -d "$deps/pytest" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes --target "$deps" \
    -r scripts/server-tests-requirements.txt >&2
fi
echo "$tree"
