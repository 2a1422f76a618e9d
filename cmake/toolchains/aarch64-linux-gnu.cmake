# Cross-building for 64-bit ARM Linux with Debian's cross toolchain
# (g++-aarch64-linux-gnu), its programs run under qemu-user (qemu-aarch64): the
# `aarch64` preset.  The generator (Python) and tq-codebook (built for this
# machine, codebooks/CMakeLists.txt) run natively.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
# Libraries from the aarch64 sysroot only (the build machine's x86 ones would not
# link); headers and CMake packages from both (header-only Boost.Math, doctest).
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
