"""The one table of ISA facts.  Everything else that knows an ISA reads it here:
the generator's variants, the CMake flags and defaults (--isa-table), the
runtime's X-macro (isas.hpp: the registry, `tq list`, the softmax copies), the
exported build script and the speed baselines.

Adding an ISA is a row here and a runtime/isa/<name>.hpp that speaks the
vocabulary of the others (docs/contributing.md).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Arch:
    name: str
    processors: str  # CMAKE_SYSTEM_PROCESSOR / platform.machine() values, a regular expression
    defined: str     # the preprocessor test for compiling on it


X86_64 = Arch("x86_64", "x86_64|AMD64|amd64", "defined(__x86_64__) || defined(__i386__)")
AARCH64 = Arch("aarch64", "aarch64|arm64|ARM64", "defined(__aarch64__) && defined(__ARM_NEON)")
ANY = Arch("any", ".*", "1")


@dataclass(frozen=True)
class Emulation:
    """Software intrinsics (SIMDe, runtime/isa/<name>_emulated.hpp) that run an ISA's
    kernels on CPUs without it, so that its code is tested there: a build that lists
    the ISA in TQ_EMULATED_ISAS (the avx512-emulated preset) compiles its kernels with
    these flags and TQ_EMULATED_<NAME>=1, and the registry runs them where cpu_check
    holds.  Slow: for tests, never a default."""
    flags: tuple[str, ...]
    cpu_check: str
    target: str  # gnu::target() of its softmax copy
    header: str  # the software intrinsics' header, which CMake checks for


@dataclass(frozen=True)
class Isa:
    name: str            # the namespace tq::<name>, the folder generated/<name>/, TQ_ISA=<name>
    lanes: int           # floats per vector V of runtime/isa/<name>.hpp (scalar: per 8-lane block)
    # Registers a power-of-two rotation keeps live at once (0: scalar, no registers),
    # and the accumulate kernels' accumulators per pass: the ISA's vector registers
    # less a few for constants and temporaries.
    reg_budget: int
    flags: tuple[str, ...]  # compiler flags of its kernels and baselines (GCC, Clang)
    arch: Arch
    cpu_check: str       # C++: whether this CPU and OS run it (evaluated on `arch` only)
    # gnu::target() of a copy compiled inside a file without `flags` ("" none needed):
    # the softmax's, whose code does not need FMA (the runtime has no contraction)
    target: str = ""
    family: str = "simd"  # templates/<family>/
    # Bytes per B register of runtime/isa/<name>_bytes.hpp, the integer score path's
    # vocabulary; 0 where the ISA has none yet (its registry rows borrow another's).
    byte_lanes: int = 0
    # An extension whose faster byte dot product the kernels use where the CPU has it
    # ("" none): <isa>_bytes.hpp's dot_bytes_<ext>, compiled for it between
    # TQ_<ISA>_<EXT>_BEGIN and _END, chosen per call by has_<ext>(); dot_bytes otherwise.
    byte_dot_extension: str = ""
    # The system header of its intrinsics ("" none), precompiled once per build for its
    # kernels: <immintrin.h> alone is half of a small kernel's compile time.
    intrinsics: str = ""
    emulation: Emulation | None = None
    # Encode's level search in one step, a grid cell's lookup and one compare
    # (runtime/isa/level_grid.hpp), where <name>.hpp has upper_level<Bits, Grid>,
    # signed_level<Bits> and a Table of the whole codebook (32 entries at 5 bits) for
    # the least-squares magnitudes: for AVX-512, whose search by halves is bound on
    # port 5 (docs/kernels.md).
    level_grid: bool = False
    # The fused kernels look 8-bit levels up one code byte at a time (a byte load and a
    # table load inserted per lane; Table::lookup_code_bytes in <name>.hpp) instead of
    # widening a register of them and gathering: on AVX2 for Zen 3, whose gathers take
    # about 14 cycles per 8 lanes (docs/kernels.md, "8-bit lookups").
    byte_lookups: bool = False


_AVX2 = '__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")'

# Best first: the registry serves the first one compiled in and run by the CPU.
ISAS = (
    Isa("avx512", 16, 16, ("-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma"), X86_64,
        _AVX2 + ' && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && '
        '__builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")',
        target="avx512f,avx512bw,avx512vl,avx512dq,avx2", byte_lanes=64, byte_dot_extension="vnni",
        intrinsics="immintrin.h", level_grid=True,
        emulation=Emulation(("-mavx2", "-mfma", "-Wno-psabi"), _AVX2, "avx2", "simde/x86/avx512.h")),
    Isa("avx2", 8, 8, ("-mavx2", "-mfma"), X86_64, _AVX2, target="avx2", byte_lanes=32, byte_dot_extension="vnni",
        byte_lookups=True,
        intrinsics="immintrin.h"),
    # Advanced SIMD is part of every AArch64 CPU.  Its V is a pair of 128-bit
    # registers, 8 floats: the packed layout's planes and the canonical sum order
    # are then AVX2's, and 32 registers hold the 16 pairs AVX2 has registers.
    Isa("neon", 8, 8, (), AARCH64, "true", byte_lanes=32, byte_dot_extension="sdot", intrinsics="arm_neon.h"),
    Isa("scalar", 8, 0, (), ANY, "true", family="scalar"),
)
assert ISAS[-1].name == "scalar", "scalar is last: the ISA every CPU runs"
BY_NAME = {isa.name: isa for isa in ISAS}
NAMES = tuple(isa.name for isa in ISAS)


def for_processor(processor: str) -> tuple[str, ...]:
    """The ISAs a build for `processor` generates by default: scalar first, then the
    processor's own, worst to best (the order of generated/)."""
    import re
    own = [isa.name for isa in reversed(ISAS)
           if isa.arch is not ANY and re.fullmatch(isa.arch.processors, processor)]
    return ("scalar", *own)


def targets_by_arch() -> list[tuple[Arch, list[Isa]]]:
    """Per architecture, its ISAs that have a gnu::target() spelling."""
    arches: dict[str, tuple[Arch, list[Isa]]] = {}
    for isa in ISAS:
        if isa.target:
            arches.setdefault(isa.arch.name, (isa.arch, []))[1].append(isa)
    return list(arches.values())


def for_this_machine() -> tuple[str, ...]:
    import platform
    return for_processor(platform.machine())


def cmake_table(processor: str) -> str:
    """The table for CMake (generate.py --isa-table): every ISA's flags, intrinsics
    header and CPU check, and the default ISAs of a build for `processor`."""
    lines = ["# Written by generator/generate.py --isa-table from generator/isas.py; do not edit.",
             f'set(TQ_KNOWN_ISAS "{";".join(NAMES)}")',
             f'set(TQ_PROCESSOR_ISAS "{";".join(for_processor(processor))}")  # {processor}',
             f'set(TQ_EMULABLE_ISAS "{";".join(isa.name for isa in ISAS if isa.emulation)}")']
    for isa in ISAS:
        lines.append(f'set(TQ_ISA_FLAGS_{isa.name} "{";".join(isa.flags)}")')
        lines.append(f'set(TQ_ISA_INTRINSICS_{isa.name} "{isa.intrinsics}")')
        lines.append(f'set(TQ_ISA_CPU_CHECK_{isa.name} [==[{isa.cpu_check}]==])')  # TQ_ISAS=native's probe
        if isa.emulation:
            lines.append(f'set(TQ_ISA_EMULATION_FLAGS_{isa.name} "{";".join(isa.emulation.flags)}")')
            lines.append(f'set(TQ_ISA_EMULATION_HEADER_{isa.name} "{isa.emulation.header}")')
    return "\n".join(lines) + "\n"
