"""The variants a build asks for, and the files they become.

One list (head dims × bits × ISAs, from the CMake options) expands here into every
generated file: its group, template, path, kernel name and operation count.
Groups are the unit of regeneration: one build-time command per group, so that
editing one template reruns only the group that renders it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import hadamard
import isas as isa_table
from int_layout import has_integer_path, has_residual_query, has_wide_score
from layout import Rate, code_bytes, needs_level_array, segments, simd_needs_padding, simd_read_size

ISAS = isa_table.NAMES
BIT_KERNELS = ("encode", "decode", "score", "score_int", "accumulate", "accumulate_int", "pack")
INT_KERNELS = ("score_int", "accumulate_int")  # the integer path: byte tables, or int16 ones for the score
SCALAR_ONLY = ("pack",)  # the layout alone: every ISA's registry entry uses the scalar one
MIN_HEAD_DIM, MAX_HEAD_DIM = 16, 1024


def supported_head_dims() -> list[int]:
    return [d for d in range(MIN_HEAD_DIM, MAX_HEAD_DIM + 1, 16) if hadamard.supported(d)]


def check_head_dim(d: int) -> None:
    if MIN_HEAD_DIM <= d <= MAX_HEAD_DIM and hadamard.supported(d):
        return
    near = sorted(supported_head_dims(), key=lambda x: (abs(x - d), x))[:2]
    reason = (f"outside [{MIN_HEAD_DIM}, {MAX_HEAD_DIM}]" if not MIN_HEAD_DIM <= d <= MAX_HEAD_DIM
              else "not m·2^k with an exact Hadamard rotation (docs/rotations.md)")
    raise ValueError(f"head dim {d} is not supported: {reason}; nearest supported: {', '.join(map(str, sorted(near)))}")


@dataclass(frozen=True)
class Config:
    head_dims: tuple[int, ...]
    bits: tuple[Rate, ...]
    isas: tuple[str, ...] = isa_table.for_this_machine()
    score_accumulators: int = 2  # tuning: partial sums per key in the SIMD score kernels

    def __post_init__(self):
        for d in self.head_dims:
            check_head_dim(d)
            for rate in self.bits:
                segments(d, rate)  # raises for a fraction the head dim cannot split into whole bytes
        for isa in self.isas:
            if isa not in ISAS:
                raise ValueError(f"ISA '{isa}' is not supported: allowed {', '.join(ISAS)}")
        if self.score_accumulators not in (1, 2, 4, 8):
            raise ValueError(f"score accumulators {self.score_accumulators} is not supported: allowed 1, 2, 4, 8")
        if not self.head_dims or "scalar" not in self.isas:
            raise ValueError("need at least one head dim, and the scalar ISA (the portable fallback)")

    def codebook_bits(self) -> list[int]:
        """The whole bit widths whose codebooks the rates use."""
        return sorted({seg.bits for d in self.head_dims for r in self.bits for seg in segments(d, r)})

    def args(self) -> str:
        def join(xs):
            return ",".join(str(x) for x in xs)
        knob = f" --score-accumulators {self.score_accumulators}" if self.score_accumulators != 2 else ""
        return f"--head-dims {join(self.head_dims)} --bits {join(self.bits)} --isas {join(self.isas)}{knob}"


@dataclass(frozen=True)
class Output:
    group: str        # regeneration unit (one build-time command each)
    path: str         # relative to the output folder
    template: str     # relative to templates/
    context: dict = field(hash=False, compare=False)
    args: str = ""    # generator arguments that reproduce this file


def kernel_name(kernel: str, d: int, rate: Rate | None, isa: str) -> str:
    return f"tq_{kernel}_d{d}" + (f"_b{rate.name}" if rate else "") + f"__{isa}"


def product_name(isa: str) -> str:
    """The ISA's dense product (one per ISA, for every head dim): prefill's tiles."""
    return f"tq_product__{isa}"


def product_rows(isa: str) -> int:
    """Rows of the product's register tile: 6 on 16 registers (12 accumulators of two
    registers a row, a broadcast, two of b), 12 on 32 (AVX-512's; NEON's V is a pair of
    its 32, so it has 16).  reg_budget stands for the count: 16 where V has 32 registers."""
    return 12 if isa_table.BY_NAME[isa].reg_budget >= 16 else 6


def kernel_file(kernel: str, d: int, rate: Rate | None, isa: str) -> str:
    """The file that defines kernel_name(...): its name without "tq_", with "-" for
    the separating underscores (rate.name keeps its own: b3_5)."""
    return f"{isa}/{kernel}-d{d}" + (f"-b{rate.name}" if rate else "") + f"-{isa}.cpp"


@dataclass(frozen=True)
class Kernel:
    """One generated function: a row of kernels.inc's TQ_KERNEL list."""
    kind: str
    head_dim: int
    rate: Rate | None
    isa: str
    symbol: str
    file: str


def rotation_ops(d: int) -> str:
    return hadamard.ops(hadamard.rotation(d))


def bit_kernel_ops(kernel: str, d: int, rate: Rate) -> str:
    search = " + ".join(f"{s.count * s.bits} compares ({s.bits - 1}-step search of |u| over {(1 << (s.bits - 1)) - 1} "
                        f"positive boundaries, 1 sign)" for s in segments(d, rate))
    per = {
        "encode": f"{d} multiplies and adds in float (norm), rotation ({rotation_ops(d)}), {d} multiplies (normalize), "
                  f"{search}, {code_bytes(d, rate)} packed bytes written",
        "decode": f"{d} centroid lookups, {d} multiplies (scale), inverse rotation ({rotation_ops(d)})",
        "score": f"per key: {d} centroid lookups (shared by a block of queries), per query {d} multiply-adds, 1 multiply (scale)",
        "score_int": (f"per query: {d} roundings to int16; per key: {d} int16 centroid lookups (shared by a block of "
                      f"4 queries), per query {d} int16 multiply-adds into int32, 2 multiplies (scales)")
                     if has_wide_score(d, rate) else
                     (f"per query: {d} roundings to int8 and {d} of the residual; per key: {d} int8 centroid lookups "
                      f"(shared by a block of queries), per query {2 * d} int8 multiply-adds into int32, 1 multiply-add "
                      f"(the two sums), 2 multiplies (scales)") if has_residual_query(d, rate) else
                     (f"per query: {d} roundings to int8; per key: {d} int8 centroid lookups (shared by a block of queries), "
                      f"per query {d} int8 multiply-adds into int32, 2 multiplies (scales)"),
        "accumulate": f"per value: {d} centroid lookups, {d} multiply-adds, 1 multiply (weight x scale)",
        "accumulate_int": f"per value and query: 1 multiply (weight x scale), 1 rounding to a byte; per value: {d} int8 "
                          f"centroid lookups (shared by a block of queries), per query {d} int8 multiply-adds into int32; "
                          f"per {64} values: {d} multiply-adds in float",
        "pack": f"pack: {code_bytes(d, rate)} bytes from {d} levels; unpack: {d} levels from {code_bytes(d, rate)} bytes",
    }
    return per[kernel]


def rotation_context(d: int, isa: str) -> dict:
    lanes = isa_table.BY_NAME[isa].lanes
    rot = hadamard.rotation(d)
    nregs = d // lanes
    budget = min(nregs, isa_table.BY_NAME[isa].reg_budget)
    return dict(head_dim=d, isa=isa, arch=isa_table.BY_NAME[isa].arch, rot=rot, lanes=lanes, nregs=nregs,
                log2p=int(math.log2(rot.pow2)),
                # FWHT stages between registers (the 2^k axis spans several) or within one
                reg_stages=int(math.log2(rot.pow2 // lanes)) if rot.pow2 >= lanes else 0,
                lane_stages=int(math.log2(min(rot.pow2, lanes))),
                chunk=budget, chunk_stages=int(math.log2(budget)) if budget else 0,
                rotate_name=kernel_name("rotate", d, None, isa), unrotate_name=kernel_name("unrotate", d, None, isa))


def has_int_kernel(kind: str, isa: str, d: int, rate: Rate) -> bool:
    """Whether `isa` has its own integer kernel `kind` (score_int, accumulate_int) for
    (d, rate): for codebooks of at most 32 levels the scalar reference and the SIMD ISAs
    with a byte-lane vocabulary (isas.py byte_lanes); above 32 levels the int16 score,
    one source that every ISA compiles (templates/score_wide.cpp.j2), and no value sum."""
    if has_wide_score(d, rate):
        return kind == "score_int"
    info = isa_table.BY_NAME[isa]
    return has_integer_path(d, rate) and (info.family == "scalar" or info.byte_lanes > 0)


def int_kernels_isa(cfg: Config, kind: str, isa: str, d: int, rate: Rate) -> str | None:
    """The ISA whose integer kernel `kind` the registry row of `isa` uses: its own, else
    the best of the build's worse ISAs of its architecture (they run wherever it does:
    an AVX-512 CPU runs AVX2), else none (the value sum of codebooks above 32 levels)."""
    arch = isa_table.BY_NAME[isa].arch
    for other in ISAS[ISAS.index(isa):]:
        info = isa_table.BY_NAME[other]
        if other in cfg.isas and info.arch in (arch, isa_table.ANY) and has_int_kernel(kind, other, d, rate):
            return other
    return None


def file_kernels(cfg: Config) -> list[tuple[str, list[Kernel]]]:
    """Every generated kernel source and the functions it defines: a file per
    kernel, or named for the pair it holds (rotate and unrotate, pack and unpack)."""
    files: list[tuple[str, list[Kernel]]] = []

    def add(kinds: tuple[str, ...], d: int, rate: Rate | None, isa: str) -> None:
        ks = [Kernel(k, d, rate, isa, kernel_name(k, d, rate, isa), kernel_file(kinds[0], d, rate, isa)) for k in kinds]
        files.append((ks[0].file, ks))

    for isa in cfg.isas:
        files.append((f"{isa}/product-{isa}.cpp",
                      [Kernel("product", 0, None, isa, product_name(isa), f"{isa}/product-{isa}.cpp")]))
        for d in cfg.head_dims:
            add(("rotate", "unrotate"), d, None, isa)
        for kernel in BIT_KERNELS:
            if isa != "scalar" and kernel in SCALAR_ONLY:
                continue
            for d in cfg.head_dims:
                for rate in cfg.bits:
                    if kernel in INT_KERNELS and not has_int_kernel(kernel, isa, d, rate):
                        continue
                    add(("pack", "unpack") if kernel == "pack" else (kernel,), d, rate, isa)
    return files


def registry_rows(cfg: Config) -> tuple[list[dict], list[dict]]:
    """kernels.inc's registry rows: one per rotation pair (head dim, ISA, and the ISA's
    product) and one per
    variant (head dim, rate, ISA) naming its kernels; pack and unpack are the
    scalar ones for every ISA (the layout alone), score_int and accumulate_int pointer
    expressions (int_kernels_isa's kernels, or nullptr)."""
    rotations = [dict(head_dim=d, isa=isa, rotate=kernel_name("rotate", d, None, isa),
                      unrotate=kernel_name("unrotate", d, None, isa), product=product_name(isa))
                 for isa in cfg.isas for d in cfg.head_dims]
    variants = []
    for isa in cfg.isas:
        for d in cfg.head_dims:
            for rate in cfg.bits:
                row = dict(head_dim=d, rate=rate, isa=isa)
                for kind in BIT_KERNELS + ("unpack",):
                    if kind not in INT_KERNELS:
                        row[kind] = kernel_name(kind, d, rate, "scalar" if kind in SCALAR_ONLY + ("unpack",) else isa)
                for kind in INT_KERNELS:
                    owner = int_kernels_isa(cfg, kind, isa, d, rate)
                    row[kind] = f"&tq::{owner}::{kernel_name(kind, d, rate, owner)}" if owner else "nullptr"
                variants.append(row)
    return rotations, variants


def outputs(cfg: Config) -> list[Output]:
    outs: list[Output] = []
    files = file_kernels(cfg)
    list_ctx = dict(head_dims=cfg.head_dims, bits=cfg.bits, isas=cfg.isas, codebook_bits=cfg.codebook_bits(),
                    kernels=[k for _, ks in files for k in ks], isa_table=isa_table)
    list_ctx["rotations"], list_ctx["variants"] = registry_rows(cfg)
    outs.append(Output("list", "kernels.inc", "kernels.inc.j2", list_ctx, cfg.args()))
    outs.append(Output("list", "isas.hpp", "isas.hpp.j2", list_ctx, cfg.args()))
    outs.append(Output("list", "codebooks/all.hpp", "codebooks-all.hpp.j2", list_ctx, cfg.args()))
    for d in cfg.head_dims:
        for b in cfg.codebook_bits():
            ctx = dict(head_dim=d, bits=b)
            outs.append(Output("codebook", f"codebooks/codebook-d{d}-b{b}.hpp", "codebook.hpp.j2", ctx,
                               f"--head-dims {d} --bits {b} --codebook-dir <tq-codebook json dir>"))
    for path, ks in files:
        k = ks[0]
        isa = isa_table.BY_NAME[k.isa]
        isas = "scalar" if k.isa == "scalar" else f"scalar,{k.isa}"  # the generator needs scalar
        if k.kind == "product":
            rows = product_rows(k.isa)
            ops = (f"per {rows} rows x {2 * isa.lanes} columns and step of k: {2 * rows} vector multiply-adds, "
                   f"2 loads of b, {rows} broadcasts of a" if isa.family == "simd"
                   else "per element of c and step of k: 1 multiply, 1 add")
            ctx = dict(isa=k.isa, arch=isa.arch, lanes=isa.lanes, rows=rows, name=k.symbol, ops=ops)
            # The product depends on the ISA alone; the generator still needs a head dim.
            outs.append(Output("product", path, f"{isa.family}/product.cpp.j2", ctx,
                               f"--head-dims {cfg.head_dims[0]} --isas {isas}"))
            continue
        ctx = rotation_context(k.head_dim, k.isa)
        template = f"{isa.family}/{'rotate' if k.rate is None else k.kind}.cpp.j2"
        if k.rate is None:
            ctx.update(name=ctx["rotate_name"], inverse_name=ctx["unrotate_name"], ops=rotation_ops(k.head_dim))
            outs.append(Output("rotate", path, template, ctx, f"--head-dims {k.head_dim} --isas {isas}"))
            continue
        d, rate, lanes = k.head_dim, k.rate, isa.lanes
        if k.kind == "score_int" and has_wide_score(d, rate):
            template = "score_wide.cpp.j2"  # one source for every ISA (the SIMD ones add their prefetch)
        ctx.update(family=isa.family, bits=rate, rate=rate, segments=segments(d, rate), code_bytes=code_bytes(d, rate),
                   score_accumulators=cfg.score_accumulators, reg_budget=isa.reg_budget, byte_lanes=isa.byte_lanes,
                   byte_dot_extension=isa.byte_dot_extension, level_grid=isa.level_grid,
                   byte_lookups=isa.byte_lookups,
                   read_size=simd_read_size(d, rate, lanes), pad=simd_needs_padding(d, rate, lanes),
                   needs_level_array=needs_level_array(d, rate, lanes),
                   name=k.symbol, ops=bit_kernel_ops(k.kind, d, rate),
                   unpack_name=kernel_name("unpack", d, rate, k.isa))
        knob = (f" --score-accumulators {cfg.score_accumulators}"
                if k.kind == "score" and cfg.score_accumulators != 2 else "")
        outs.append(Output(k.kind, path, template, ctx, f"--head-dims {d} --bits {rate} --isas {isas}{knob}"))
    return outs


def groups(outs: list[Output]) -> list[str]:
    seen: list[str] = []
    for o in outs:
        if o.group not in seen:
            seen.append(o.group)
    return seen
