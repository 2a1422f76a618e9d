#!/usr/bin/env bash
# llama-cpp-python 0.3.36 (the sdist scripts/setup-llamacpp.sh unpacked) as a wheel on the
# patched llama.cpp: its Python bindings, with the shared libraries of a llama.cpp preset's
# build and llama_cpp/turboquant.py (the tq cache types by name; docs/llama.cpp.md, "Python").
#
#   scripts/build-python-wheel.sh [BUILD_DIR] [OUT_DIR]
#
# BUILD_DIR: a built llama.cpp or llama.cpp-test preset (default build/llama.cpp); the
# wheel goes to OUT_DIR (default BUILD_DIR/python) and its path is printed.  The sdist's
# own CMake build of llama.cpp is switched off (LLAMA_BUILD, LLAVA_BUILD): the libraries
# come built, and find each other beside themselves ($ORIGIN).  Needs no network.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/llama.cpp}
out=${2:-$build/python}
sdist=.llamacpp/llama_cpp_python-0.3.36
backend=.llamacpp/wheel-build  # scikit-build-core, pinned (scripts/setup-llamacpp.sh)
for need in "$build/bin/libllama.so" "$sdist/pyproject.toml" "$backend/scikit_build_core"; do
  [ -e "$need" ] || { echo "build-python-wheel.sh: no $need (scripts/setup-llamacpp.sh, then build the preset)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Without the vendored tree, and without .gitignore (it hides llama_cpp/lib from the backend).
tar -C "$sdist" --exclude=./vendor --exclude=./.gitignore -cf - . | tar -C "$work" -xf -
# The libraries under the names the loader and their NEEDED entries ask for (a wheel
# holds no symbolic links).
mkdir -p "$work/llama_cpp/lib"
cp -L "$build/bin/libllama.so" "$work/llama_cpp/lib/"
for lib in ggml ggml-base ggml-cpu; do
  cp -L "$build/bin/lib$lib.so.0" "$work/llama_cpp/lib/"
done
cp integrations/llama.cpp/python/turboquant.py "$work/llama_cpp/"
mkdir -p "$out"
PYTHONPATH="$PWD/$backend${PYTHONPATH:+:$PYTHONPATH}" python3 -m pip wheel --quiet --disable-pip-version-check \
  --no-deps --no-build-isolation -C cmake.define.LLAMA_BUILD=OFF -C cmake.define.LLAVA_BUILD=OFF \
  -w "$work/dist" "$work" >&2
wheel=$(ls "$work"/dist/*.whl)
rm -f "$out"/llama_cpp_python-*.whl
cp "$wheel" "$out/"
echo "$out/$(basename "$wheel")"
