"""The C++ the rotation templates emit for the dense Hadamard stages (hadamard.py
has the matrices; the FWHT part is written in the templates), and the canonical
pairwise sums that every ISA reproduces.
"""
from __future__ import annotations

from hadamard import DenseStage, Rotation


def _entry(stage: DenseStage, row: int, col: int, transpose: bool) -> int:
    return stage.matrix[col][row] if transpose else stage.matrix[row][col]


def _pairwise(leaves: list[tuple[str, bool]], neg, add, sub) -> str:
    """The canonical sum of signed terms (expr, negated): split in two halves (the
    first one the larger), each summed the same way, then added; a negated term
    on the right is subtracted.  A balanced tree: m terms in log2(m) rounds."""
    def tree(lo: int, hi: int) -> tuple[str, bool]:
        if hi - lo == 1:
            return leaves[lo]
        mid = lo + (hi - lo + 1) // 2
        (left, left_neg), (right, right_neg) = tree(lo, mid), tree(mid, hi)
        if left_neg:
            left = neg(left)
        return (sub if right_neg else add)(left, right), False

    expr, negated = tree(0, len(leaves))
    return neg(expr) if negated else expr


def simd_sum(prefix: str, count: int) -> str:
    """Registers prefix0..prefix<count-1> added pairwise (add(add(a0, a1), add(a2, a3)))."""
    return _pairwise([(f"{prefix}{i}", False) for i in range(count)], lambda x: x,
                     lambda x, y: f"add({x}, {y})", lambda x, y: f"sub({x}, {y})")


def scalar_dense_stmts(rot: Rotation, tmp: str, out: str, transpose: bool) -> list[str]:
    """Statements applying each dense stage to float out[d] in place (through
    float tmp[d]).  Output a of a stage sums ±inputs a' = 0..m-1 in the order of
    _pairwise: the canonical order every ISA reproduces."""
    stmts = []
    d = rot.head_dim
    for stage in rot.dense:
        m, s = stage.order, stage.stride
        stmts.append(f"// {m}-point Hadamard stage, coordinates {s} apart")
        stmts.append(f"std::memcpy({tmp}, {out}, sizeof(float) * {d});")
        for o in range(0, d, m * s):
            for a in range(m):
                for c in range(s):
                    leaves = [(f"{tmp}[{o + a2 * s + c}]", _entry(stage, a, a2, transpose) < 0) for a2 in range(m)]
                    expr = _pairwise(leaves, lambda x: f"-{x}", lambda x, y: f"({x} + {y})", lambda x, y: f"({x} - {y})")
                    stmts.append(f"{out}[{o + a * s + c}] = {expr[1:-1] if expr.startswith('(') else expr};")
    return stmts


def simd_dense_stmts(rot: Rotation, lanes: int, var: str, transpose: bool) -> list[str]:
    """Statements applying each dense stage to registers var0.. (lanes
    coordinates each) in place, in scalar_dense_stmts' order of additions.  A
    stage whose stride is a multiple of lanes combines whole registers; one with
    a stride S < lanes holds lanes/S blocks per register, broadcasts each input
    block to all blocks and flips the signs per block (negate_blocks)."""
    def total(leaves):
        return _pairwise(leaves, lambda x: f"neg({x})", lambda x, y: f"add({x}, {y})", lambda x, y: f"sub({x}, {y})")

    stmts = []
    d = rot.head_dim
    for stage in rot.dense:
        m, s = stage.order, stage.stride
        stmts.append(f"{{  // {m}-point Hadamard stage, coordinates {s} apart")
        assigns = []
        if s % lanes == 0:
            cols = s // lanes
            for o in range(0, d // lanes, m * cols):
                for a in range(m):
                    for c in range(cols):
                        reg = o + a * cols + c
                        leaves = [(f"{var}{o + a2 * cols + c}", _entry(stage, a, a2, transpose) < 0) for a2 in range(m)]
                        stmts.append(f"    const V t{reg} = {total(leaves)};")
                        assigns.append(reg)
        else:
            if lanes % s or (m * s) % lanes:
                raise ValueError(f"a {m}-point stage {s} apart does not fit {lanes}-lane registers")
            g, regs = lanes // s, m * s // lanes
            full = (1 << g) - 1
            for o in range(0, d // lanes, regs):
                for a2 in range(m):
                    stmts.append(f"    const V b{o}_{a2} = broadcast_block<{s}, {a2 % g}>({var}{o + a2 // g});")
                for q in range(regs):
                    leaves = []
                    for a2 in range(m):
                        pat = sum(1 << slot for slot in range(g) if _entry(stage, q * g + slot, a2, transpose) < 0)
                        b = f"b{o}_{a2}"
                        # a sign per block where the blocks differ; else a plain (negated) term
                        leaves.append((b, pat == full) if pat in (0, full) else (f"negate_blocks<{s}, {pat:#x}>({b})", False))
                    stmts.append(f"    const V t{o + q} = {total(leaves)};")
                    assigns.append(o + q)
        stmts += [f"    {var}{r} = t{r};" for r in assigns]
        stmts.append("}")
    return stmts
