#!/usr/bin/env bash
# Fetches llama.cpp's sources, pinned by hash in scripts/llamacpp-requirements.txt (the
# source distribution of llama-cpp-python, which vendors them), into .llamacpp/ (or
# $TQ_LLAMACPP_DIR) with the Python packages of llama.cpp's server test suite and of
# llama-cpp-python's wheel build, and prints
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
# scikit-build-core, for scripts/build-python-wheel.sh (llama.cpp/python), pinned by hash.
build_deps="$dir/wheel-build"
if [ ! -d "$build_deps/scikit_build_core" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes --target "$build_deps" \
    -r scripts/python-wheel-requirements.txt >&2
fi
# llama-cpp-python's own dependencies, as wheels for llama.cpp/python's fresh virtual
# environment (installed there with no network).
runtime_wheels="$dir/wheel-runtime"
if [ ! -d "$runtime_wheels" ]; then
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes -d "$runtime_wheels" \
    -r scripts/python-wheel-runtime-requirements.txt >&2
fi
echo "$tree"
