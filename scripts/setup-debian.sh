#!/usr/bin/env bash
# Installs what building and testing TurboQuant needs on Debian 12, skipping
# what is already there: cmake, ninja, g++, Boost.Math, doctest, Google Benchmark,
# Python 3 with Jinja2 and pip, pkg-config (the tests build a C consumer with it),
# clang with its runtime libraries (libclang-rt-dev: libFuzzer and clang's
# sanitizer runtimes, which the clang package alone lacks) for the fuzz preset,
# the aarch64 cross toolchain with qemu's user-mode emulator for the aarch64 preset,
# patch (the llama.cpp preset patches llama.cpp's sources), and SIMDe (the avx512-emulated
# preset runs the AVX-512 kernels on its software intrinsics).
set -euo pipefail

packages=(cmake ninja-build g++ libboost-math-dev doctest-dev libbenchmark-dev python3 pkgconf clang libclang-rt-dev
          g++-aarch64-linux-gnu qemu-user patch libsimde-dev)
# pip for Debian's own python3 (scripts/setup-model.sh installs the test model with it)
[ "$(command -v python3)" != /usr/bin/python3 ] || packages+=(python3-pip)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "setup-debian.sh: run as root: $*" >&2; exit 1
  fi
}

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-debian.sh: installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Jinja2 for the python3 that CMake will find first on PATH.
if ! python3 -c "import jinja2" 2>/dev/null; then
  if [ "$(command -v python3)" = /usr/bin/python3 ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-jinja2 >/dev/null
  else
    python3 -m pip install --quiet jinja2
  fi
fi
echo "setup-debian.sh: cmake, ninja, g++, Boost.Math, doctest, Google Benchmark, pkg-config, Jinja2, clang with libFuzzer, g++ for aarch64 with qemu-aarch64, and patch are installed"
