"""How the integer score path unpacks a packed vector into byte lanes.

The integer kernels look a level's int8 centroid up with byte shuffles, so they
want one level per byte.  A window is 8 coordinates whose fields sit in 8
consecutive bytes of every plane of their segment, at one bit position per
plane: one 8-byte load, a shift and a mask per plane give their levels.  A
register of `lanes` bytes is lanes/8 windows of one segment (a segment has one
codebook, so one shuffle table per register); the query is permuted once per
call into the registers' coordinate order (`coords`), as the float kernels do
with kLaneCoord.  Layouts whose windows would cross a plane's end (small planes
of 1-bit fields, e.g. 3 bits at head dim 96) have no windows: their kernels
gather each key's int8 centroids into an array first.
"""
from __future__ import annotations

from dataclasses import dataclass

from layout import Plane, segment_planes, segments

WINDOW = 8  # coordinates (and bytes per plane) per window
MAX_TABLE_BITS = 5  # one byte shuffle looks up 16 entries, two 32: segments of more bits have no integer path


@dataclass(frozen=True)
class PlaneRead:
    """One plane's bits of a register's windows: per window the 8 bytes at `offsets[w]`
    (within the vector; -1: no window, zero lanes) shifted right by `shifts[w]`."""
    plane: Plane
    offsets: tuple[int, ...]
    shifts: tuple[int, ...]


@dataclass(frozen=True)
class ByteRegister:
    segment: int               # index into segments(): the register's codebook
    coords: tuple[int, ...]    # the coordinate of each byte lane, -1 for a zero lane
    reads: tuple[PlaneRead, ...]


def has_integer_path(head_dim: int, bits) -> bool:
    """Whether every segment's codebook fits two 16-entry byte shuffles (32 levels)."""
    return all(s.bits <= MAX_TABLE_BITS for s in segments(head_dim, bits))


def has_wide_score(head_dim: int, bits) -> bool:
    """Whether the integer score looks levels up in int16 tables with an int16 query
    (templates/score_wide.cpp.j2, runtime/isa/int16.hpp): where some segment's codebook
    has more than 32 levels, whose error int8 roundings would swamp."""
    return not has_integer_path(head_dim, bits)


MAX_RESIDUAL_HEAD_DIM = 512  # 254 Σ Q T + Σ R T fits int32: d · 127² · 255 < 2^31


def has_residual_query(head_dim: int, bits) -> bool:
    """Whether the integer score rounds the query to two bytes per coordinate (Q and its
    residual R, docs/kernels.md): where a segment's codebook has 32 levels, whose error is
    small enough that the int8 roundings add about a twentieth to it, half of that the
    query's, and where the two sums' combination fits int32."""
    return (has_integer_path(head_dim, bits) and head_dim <= MAX_RESIDUAL_HEAD_DIM
            and max(s.bits for s in segments(head_dim, bits)) == MAX_TABLE_BITS)


def byte_registers(head_dim: int, bits, lanes: int) -> list[ByteRegister] | None:
    """The registers of `lanes` bytes that unpack one vector, or None where some
    window would cross a plane's end."""
    per_register = lanes // WINDOW
    registers = []
    for index, seg in enumerate(segments(head_dim, bits)):
        first, *others = segment_planes(seg)
        if first.nbytes % WINDOW:
            return None
        windows = []  # (first coordinate within the segment, [(offset, shift) per plane])
        for k in range(first.fields):
            for j in range(0, first.nbytes, WINDOW):
                local = k * first.nbytes + j
                reads = [(first.offset + j, k * first.width)]
                for p in others:
                    field, byte = divmod(local, p.nbytes)
                    if byte + WINDOW > p.nbytes:
                        return None
                    reads.append((p.offset + byte, field * p.width))
                windows.append((local, reads))
        for r in range(0, len(windows), per_register):
            chunk = windows[r:r + per_register]
            missing = per_register - len(chunk)
            coords = [seg.first + local + w for local, _ in chunk for w in range(WINDOW)] + [-1] * (WINDOW * missing)
            reads = tuple(PlaneRead(p, tuple(win[1][i][0] for win in chunk) + (-1,) * missing,
                                    tuple(win[1][i][1] for win in chunk) + (0,) * missing)
                          for i, p in enumerate([first, *others]))
            registers.append(ByteRegister(index, tuple(coords), reads))
    return registers


def byte_levels_expr(reg: ByteRegister, src: str) -> str:
    """Expression (a B register) holding the levels of reg's coordinates, one per byte,
    with the load_windows / field_bytes / shl_bytes / or_bytes helpers of runtime/isa/<isa>.hpp."""
    expr = None
    for read in reg.reads:
        p = read.plane
        # masked always: the shift is of wider lanes, so the next byte's low bits come in above the field
        e = (f"field_bytes<{p.mask}, {', '.join(map(str, read.shifts))}>"
             f"(load_windows<{', '.join(map(str, read.offsets))}>({src}))")
        if p.shift:
            e = f"shl_bytes<{p.shift}>({e})"
        expr = e if expr is None else f"or_bytes({expr}, {e})"
    return expr



def natural_byte_lanes(head_dim: int, bits, byte_lanes: int) -> int:
    """The bytes of the integer kernels' registers for one vector, where byte lane k holds
    coordinate k (k < head_dim; zero lanes after), as every layout's windows do (and the
    gathering kernels' arrays): the integer value sum adds its sums straight into the
    accumulators by that.  Raises where a layout would not."""
    regs = byte_registers(head_dim, bits, byte_lanes)
    if regs is None:
        return -(-head_dim // byte_lanes) * byte_lanes
    coords = [c for r in regs for c in r.coords]
    if coords != list(range(head_dim)) + [-1] * (len(coords) - head_dim):
        raise ValueError(f"head dim {head_dim} at {bits} bits: the byte lanes are not in coordinate order, "
                         "which templates/simd/accumulate_int.cpp.j2 needs")
    return len(coords)
