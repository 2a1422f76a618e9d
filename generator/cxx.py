"""C++ expression builders for the packed layout, used by the templates.

Jinja decides the shape of the code; these return the index arithmetic as text,
with every index a literal, so each generated kernel spells out the layout.
"""
from __future__ import annotations

from layout import (Plane, Segment, coords_of_byte, fields_of, planes, register_parts, segment_planes, simd_read_size,
                    small_field_fits)


def level_expr(head_dim: int, bits, coord: int, src: str) -> str:
    """Expression reading coordinate `coord`'s level from packed bytes `src`."""
    parts = []
    for f in fields_of(head_dim, bits, coord):
        byte = f"{src}[{f.byte}]"
        value = f"({byte} >> {f.bit})" if f.bit else byte
        if f.bit + f.plane.width < 8:
            value = f"({value} & {f.plane.mask})"
        parts.append(f"({value} << {f.plane.shift})" if f.plane.shift else value)
    return " | ".join(parts)


def packed_byte_stmts(head_dim: int, bits, levels: str, dst: str, only=None) -> list[str]:
    """Statements writing every packed byte of `dst` (or those of plane `only`) from the level array `levels`."""
    stmts = []
    for p in planes(head_dim, bits):
        if only is not None and p != only:
            continue
        for j in range(p.nbytes):
            terms = []
            for k, coord in enumerate(coords_of_byte(p, j)):
                value = f"{levels}[{coord}]"
                if p.shift:
                    value = f"({value} >> {p.shift})"
                if p.width < 8:  # also drops bits above `bits` in a bad level
                    value = f"({value} & {p.mask})"
                terms.append(f"({value} << {k * p.width})" if k else value)
            stmts.append(f"{dst}[{p.offset + j}] = static_cast<uint8_t>({' | '.join(terms)});")
    return stmts


def _plane_runs(p: Plane, base: int, lo: int, hi: int) -> list[tuple[int, int, int, int]]:
    """Lanes lo..hi-1 hold coordinates base+lo.. of p's segment: split them into
    runs (k, byte, lane, count) of consecutive lanes reading field k of consecutive bytes."""
    runs: list[list[int]] = []
    for lane in range(lo, hi):
        k, j = divmod(base + lane - p.first, p.nbytes)
        if runs and runs[-1][0] == k and runs[-1][1] + runs[-1][3] == j:
            runs[-1][3] += 1
        else:
            runs.append([k, j, lane, 1])
    return [tuple(r) for r in runs]


def _plane_levels(p: Plane, base: int, lo: int, hi: int, lanes: int, size: int, src: str) -> str:
    """Expression (an I register) whose lanes lo..hi-1 hold plane p's bits of
    coordinates base+lo..base+hi-1; `size` bytes may be read at src."""
    if small_field_fits(p, base, lo, hi, lanes):
        return f"small_field<{p.nbytes}, {p.width}, {(base + lo - p.first) // p.nbytes}>({src} + {p.offset})"
    expr = None
    for k, j, lane, count in _plane_runs(p, base, lo, hi):
        byte = p.offset + j
        window = min(max(byte - lane, 0), size - lanes)  # a full load inside [0, size)
        shift = lane - (byte - window)                  # lanes the loaded bytes move up
        mask = p.mask if (k + 1) * p.width < 8 else 255
        args = f"{k * p.width}, {mask}" + (f", {shift}" if shift else "")
        run = f"field<{args}>({src} + {window})"
        expr = run if expr is None else f"blend<{_lane_mask(lane, lane + count)}>({expr}, {run})"
    return expr


def _lane_mask(lo: int, hi: int) -> str:
    return hex(((1 << hi) - 1) ^ ((1 << lo) - 1))


def _blend_parts(parts, part_expr) -> str:
    expr = None
    for i, seg, lo, hi in parts:
        e = part_expr(i, seg, lo, hi)
        expr = e if expr is None else f"blend<{_lane_mask(lo, hi)}>({expr}, {e})"
    return expr


def simd_levels(head_dim: int, bits, seg: Segment, first: int, lo: int, hi: int, lanes: int, src: str) -> str:
    """Expression (an I register) whose lanes lo..hi-1 hold the levels of coordinates
    first+lo..first+hi-1 (all in segment seg), using the field/small_field/blend
    helpers of runtime/isa/<isa>.hpp."""
    size = simd_read_size(head_dim, bits, lanes)
    parts = []
    for p in segment_planes(seg):
        e = _plane_levels(p, first, lo, hi, lanes, size, src)
        parts.append(f"shl<{p.shift}>({e})" if p.shift else e)
    expr = parts[-1]
    for part in reversed(parts[:-1]):
        expr = f"or_({part}, {expr})"
    return expr


def simd_centroids(head_dim: int, bits, first: int, lanes: int, src: str, tables: str,
                   byte_lookups: bool = False) -> str:
    """Expression (a V register): the centroids of coordinates first..first+lanes-1,
    each looked up in its segment's table <tables><segment index>; with byte_lookups
    (isas.py), an 8-bit segment's from its code bytes in memory, `lanes` of them from
    the byte of lane 0 (lanes outside lo..hi look up other bytes, which the blend drops).
    Every layout the generator accepts keeps those bytes inside the readable ones (all
    supported head dims at rates 7.125 to 8 were checked); one that did not stops the
    generator here rather than fall back to a slower lookup."""
    size = simd_read_size(head_dim, bits, lanes)

    def part(i, seg, lo, hi):
        if byte_lookups and seg.bits == 8:
            (p,) = segment_planes(seg)
            window = p.offset + first - p.first  # the byte of lane 0: byte j holds coordinate p.first + j
            if not 0 <= window <= size - lanes:
                raise ValueError(f"d={head_dim} bits={bits}: the code bytes of coordinates {first}.."
                                 f"{first + lanes - 1} start at byte {window}, outside the {size} readable")
            return f"{tables}{i}.lookup_code_bytes<1>({src} + {window})"
        return f"{tables}{i}.lookup({simd_levels(head_dim, bits, seg, first, lo, hi, lanes, src)})"

    return _blend_parts(register_parts(head_dim, bits, first, lanes), part)


def grid_search(level_grid: bool, segment_bits: int) -> bool:
    """Whether encode searches a segment's levels by a grid (runtime/isa/level_grid.hpp):
    on ISAs with one (isas.py level_grid), for 3 to 5 bits (3 to 15 positive boundaries;
    the search by halves takes one step below, and 64 levels need more cells above)."""
    return level_grid and 3 <= segment_bits <= 5


def simd_quantize_stmts(head_dim: int, bits, reg: int, lanes: int, level_grid: bool = False) -> list[str]:
    """Statements quantizing register r<reg> (coordinates reg*lanes..): a<reg> = |r<reg>|,
    j<reg>_<i> = the number of segment i's positive boundaries <= |r| (from the upper
    halves bounds<i> of the boundary tables), or with a grid (level_grid) |r|'s level in
    the whole codebook (upper_level, in one step by grid<i> where it is usable), for
    each segment the register holds, and the levels l<reg> (docs/packed-format.md,
    "Levels")."""
    parts = register_parts(head_dim, bits, reg * lanes, lanes)
    stmts = [f"const V a{reg} = abs_(r{reg});"]
    for i, seg, _, _ in parts:
        search = (f"upper_level<{seg.bits - 1}, grid{i}>" if grid_search(level_grid, seg.bits)
                  else f"bucketize<{seg.bits - 1}>")
        stmts.append(f"const I j{reg}_{i} = {search}(a{reg}, bounds{i});")
    levels = _blend_parts(parts, lambda i, seg, lo, hi: (f"signed_level<{seg.bits}>" if grid_search(level_grid, seg.bits)
                                                         else f"mirror<{seg.bits}>") + f"(j{reg}_{i}, r{reg})")
    return stmts + [f"const I l{reg} = {levels};"]


def simd_magnitudes(head_dim: int, bits, reg: int, lanes: int, level_grid: bool = False) -> str:
    """Expression (a V register): the centroid magnitudes |c| of register reg's levels,
    looked up by j<reg>_<i> in the upper halves magnitudes<i> of the centroid tables
    (with a grid: by the upper level in the whole table, centroids<i>)."""
    return _blend_parts(register_parts(head_dim, bits, reg * lanes, lanes),
                        lambda i, seg, lo, hi: (f"centroids{i}" if grid_search(level_grid, seg.bits)
                                                else f"magnitudes{i}") + f".lookup(j{reg}_{i})")


def simd_pack_stmts(head_dim: int, bits, lanes: int, regs: str, levels: str, dst: str) -> list[str]:
    """Statements writing the packed bytes from level registers `regs`<r> (lanes
    coordinates each).  Planes whose bytes tile whole registers are packed in
    registers; the others byte by byte from the level array `levels`.  The levels are
    encode's, below 2^bits, so a segment's top plane needs no mask."""
    stmts = []
    top_shift: dict[int, int] = {}
    for p in planes(head_dim, bits):
        top_shift[p.first] = max(top_shift.get(p.first, 0), p.shift)
    for p in planes(head_dim, bits):
        if p.nbytes % lanes or p.first % lanes:
            stmts += packed_byte_stmts(head_dim, bits, levels, dst, only=p)
            continue
        exprs = []  # register j's bytes go to dst + p.offset + j * lanes
        for j0 in range(0, p.nbytes, lanes):
            terms = []
            for k, coord in enumerate(coords_of_byte(p, j0)):
                value = f"{regs}{coord // lanes}"
                if p.shift:
                    value = f"shr<{p.shift}>({value})"
                if p.shift != top_shift[p.first]:
                    value = f"and_<{p.mask}>({value})"
                terms.append(f"shl<{k * p.width}>({value})" if k else value)
            expr = terms[-1]
            for t in reversed(terms[:-1]):
                expr = f"or_({t}, {expr})"
            exprs.append(expr)
        # Four registers' bytes in one store_bytes4 (packs, one store), the rest one each.
        full = len(exprs) - len(exprs) % 4
        for k in range(0, full, 4):
            stmts.append(f"store_bytes4({dst} + {p.offset + k * lanes}, {', '.join(exprs[k:k + 4])});")
        for k in range(full, len(exprs)):
            stmts.append(f"store_bytes({dst} + {p.offset + k * lanes}, {exprs[k]});")
    return stmts


def dword_lanes(head_dim: int, bits, lanes: int, byte_lookups: bool = False):
    """A faster unpacking for single-plane widths (1, 2, 4, 8 bits) whose plane
    tiles whole registers of 4*lanes bytes: load a register of dwords, and each
    field position s of a dword gives one register of levels by a shift and a
    mask, with no byte widening.  Lane w of group (m, s) then holds a coordinate
    other than the natural order: the fused kernels permute the query (score) or
    the accumulator (accumulate) once per call to match.  Returns the groups
    [{reg, shift, mask, coords, byte}] (mask None when the field ends the dword;
    byte, with byte_lookups (isas.py) and 8-bit fields, the offset of lane 0's code
    byte, lane w's 4 w further on: the group is looked up from memory, not from the
    register), or None where this does not apply."""
    (p, *rest) = planes(head_dim, bits)
    chunk = 4 * lanes
    if rest or p.nbytes % chunk:
        return None
    groups = []
    for m in range(p.nbytes // chunk):
        for s in range(32 // p.width):
            bit = s * p.width
            coords = [((bit % 8) // p.width) * p.nbytes + m * chunk + 4 * w + bit // 8 for w in range(lanes)]
            byte = m * chunk + bit // 8 if byte_lookups and p.width == 8 else None
            groups.append(dict(reg=m, shift=bit, mask=p.mask if bit + p.width < 32 else None, coords=coords,
                               byte=byte))
    return groups
