"""The variants a build asks for, and the files they become.

One list (head dims × bits × ISAs, from the CMake options) expands here into every
generated file: its group, template, path, kernel name and operation count.
Groups are the unit of regeneration: one build-time command per group, so that
editing one template reruns only the group that renders it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from cxx import needs_level_array
from layout import code_bytes

ISAS = ("scalar", "avx2", "avx512")
LANES = {"scalar": 8, "avx2": 8, "avx512": 16}  # floats per register (scalar: per 8-lane block)
# Registers a rotation keeps live at once: AVX2 has 16, AVX-512 32, and the
# in-register stages need a few for constants and temporaries.
REG_BUDGET = {"scalar": 0, "avx2": 8, "avx512": 16}
BIT_KERNELS = ("encode", "decode", "score", "accumulate", "pack")
SCALAR_ONLY = ("pack",)  # the layout alone: every ISA's registry entry uses the scalar one
MIN_BITS, MAX_BITS = 1, 8


def check_head_dim(d: int) -> None:
    if d < 16 or d > 1024 or d & (d - 1):
        raise ValueError(f"head dim {d} is not supported: this build generates powers of two in [16, 1024]")


def check_bits(b: int) -> None:
    if not MIN_BITS <= b <= MAX_BITS:
        raise ValueError(f"bits {b} is not supported: allowed 1..8")


@dataclass(frozen=True)
class Config:
    head_dims: tuple[int, ...]
    bits: tuple[int, ...]
    isas: tuple[str, ...] = ISAS

    def __post_init__(self):
        for d in self.head_dims:
            check_head_dim(d)
        for b in self.bits:
            check_bits(b)
        for isa in self.isas:
            if isa not in ISAS:
                raise ValueError(f"ISA '{isa}' is not supported: allowed {', '.join(ISAS)}")
        if not self.head_dims or "scalar" not in self.isas:
            raise ValueError("need at least one head dim, and the scalar ISA (the portable fallback)")

    def args(self) -> str:
        def join(xs):
            return ",".join(str(x) for x in xs)
        return f"--head-dims {join(self.head_dims)} --bits {join(self.bits)} --isas {join(self.isas)}"


@dataclass(frozen=True)
class Output:
    group: str        # regeneration unit (one build-time command each)
    path: str         # relative to the output folder
    template: str     # relative to templates/
    context: dict = field(hash=False, compare=False)
    args: str = ""    # generator arguments that reproduce this file


def kernel_name(kernel: str, d: int, bits: int | None, isa: str) -> str:
    return f"tq_{kernel}_d{d}" + (f"_b{bits}" if bits else "") + f"__{isa}"


def rotation_ops(d: int) -> str:
    return f"{d * int(math.log2(d))} add/sub (FWHT), {d} multiplies (signs with 1/sqrt(d) folded in)"


def bit_kernel_ops(kernel: str, d: int, bits: int) -> str:
    levels = 1 << bits
    per = {
        "encode": f"{d} multiply-adds in double (norm), {d} multiplies (normalize), rotation "
                  f"({rotation_ops(d)}), {d * bits} compares ({bits}-step search over {levels - 1} boundaries), "
                  f"{code_bytes(d, bits)} packed bytes written",
        "decode": f"{d} centroid lookups, {d} multiplies (scale), inverse rotation ({rotation_ops(d)})",
        "score": f"per key: {d} centroid lookups, {d} multiply-adds, 1 multiply (scale)",
        "accumulate": f"per value: {d} centroid lookups, {d} multiply-adds, 1 multiply (weight x scale)",
        "pack": f"pack: {code_bytes(d, bits)} bytes from {d} levels; unpack: {d} levels from {code_bytes(d, bits)} bytes",
    }
    return per[kernel]


def outputs(cfg: Config) -> list[Output]:
    outs: list[Output] = []
    list_ctx = dict(head_dims=cfg.head_dims, bits=cfg.bits, isas=cfg.isas)
    outs.append(Output("list", "kernels.inc", "kernels.inc.j2", list_ctx, cfg.args()))
    outs.append(Output("list", "codebooks/all.hpp", "codebooks-all.hpp.j2", list_ctx, cfg.args()))
    for d in cfg.head_dims:
        for b in cfg.bits:
            ctx = dict(head_dim=d, bits=b)
            outs.append(Output("codebook", f"codebooks/codebook-d{d}-b{b}.hpp", "codebook.hpp.j2", ctx,
                               f"--head-dims {d} --bits {b} --codebook-dir <tq-codebook json dir>"))
    for isa in cfg.isas:
        family = "scalar" if isa == "scalar" else "simd"
        lanes = LANES[isa]
        for d in cfg.head_dims:
            nregs = d // lanes
            budget = min(nregs, REG_BUDGET[isa])
            ctx = dict(head_dim=d, isa=isa, log2d=int(math.log2(d)), lanes=lanes, nregs=nregs,
                       reg_stages=int(math.log2(nregs)), chunk=budget,
                       chunk_stages=int(math.log2(budget)) if budget else 0,
                       name=kernel_name("rotate", d, None, isa), inverse_name=kernel_name("unrotate", d, None, isa),
                       ops=rotation_ops(d))
            outs.append(Output("rotate", f"{isa}/rotate-d{d}-{isa}.cpp", f"{family}/rotate.cpp.j2", ctx,
                               f"--head-dims {d} --isas {isa}"))
        for kernel in BIT_KERNELS:
            if isa != "scalar" and kernel in SCALAR_ONLY:
                continue
            for d in cfg.head_dims:
                for b in cfg.bits:
                    ctx = dict(head_dim=d, bits=b, isa=isa, levels=1 << b, code_bytes=code_bytes(d, b),
                               lanes=lanes, nregs=d // lanes, reg_stages=int(math.log2(d // lanes)),
                               needs_level_array=needs_level_array(d, b, lanes),
                               name=kernel_name(kernel, d, b, isa), ops=bit_kernel_ops(kernel, d, b),
                               rotate_name=kernel_name("rotate", d, None, isa),
                               unrotate_name=kernel_name("unrotate", d, None, isa),
                               unpack_name=kernel_name("unpack", d, b, isa))
                    outs.append(Output(kernel, f"{isa}/{kernel}-d{d}-b{b}-{isa}.cpp", f"{family}/{kernel}.cpp.j2",
                                       ctx, f"--head-dims {d} --bits {b} --isas {isa}"))
    return outs


def groups(outs: list[Output]) -> list[str]:
    seen: list[str] = []
    for o in outs:
        if o.group not in seen:
            seen.append(o.group)
    return seen
