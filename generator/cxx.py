"""C++ expression builders for the packed layout, used by the templates.

Jinja decides the shape of the code; these return the index arithmetic as text,
with every index a literal, so each generated kernel spells out the layout.
"""
from __future__ import annotations

from layout import coords_of_byte, fields_of, planes


def level_expr(head_dim: int, bits: int, coord: int, src: str) -> str:
    """Expression reading coordinate `coord`'s level from packed bytes `src`."""
    parts = []
    for f in fields_of(head_dim, bits, coord):
        byte = f"{src}[{f.byte}]"
        value = f"({byte} >> {f.bit})" if f.bit else byte
        if f.bit + f.plane.width < 8:
            value = f"({value} & {f.plane.mask})"
        parts.append(f"({value} << {f.plane.shift})" if f.plane.shift else value)
    return " | ".join(parts)


def packed_byte_stmts(head_dim: int, bits: int, levels: str, dst: str, only=None) -> list[str]:
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


def simd_level_expr(head_dim: int, bits: int, first: int, lanes: int, src: str) -> str:
    """Expression (an I register) with the levels of coordinates first..first+lanes-1,
    using the field/small_field helpers of runtime/isa/<isa>.hpp."""
    parts = []
    for p in planes(head_dim, bits):
        if p.nbytes % lanes == 0:
            k, j = divmod(first, p.nbytes)
            mask = p.mask if k * p.width + p.width < 8 else 255
            expr = f"field<{k * p.width}, {mask}>({src} + {p.offset + j})"
        elif lanes % p.nbytes == 0:
            expr = f"small_field<{p.nbytes}, {p.width}, {first // p.nbytes}>({src} + {p.offset})"
        else:
            raise ValueError(f"plane of {p.nbytes} bytes does not tile {lanes} lanes")
        parts.append(f"shl<{p.shift}>({expr})" if p.shift else expr)
    expr = parts[-1]
    for part in reversed(parts[:-1]):
        expr = f"or_({part}, {expr})"
    return expr


def simd_pack_stmts(head_dim: int, bits: int, lanes: int, regs: str, levels: str, dst: str) -> list[str]:
    """Statements writing the packed bytes from level registers `regs`<r> (lanes
    coordinates each).  Planes whose bytes tile whole registers are packed in
    registers; the others byte by byte from the level array `levels`."""
    stmts = []
    for p in planes(head_dim, bits):
        if p.nbytes % lanes:
            stmts += packed_byte_stmts(head_dim, bits, levels, dst, only=p)
            continue
        for j0 in range(0, p.nbytes, lanes):
            terms = []
            for k, coord in enumerate(coords_of_byte(p, j0)):
                value = f"{regs}{coord // lanes}"
                if p.shift:
                    value = f"shr<{p.shift}>({value})"
                if p.width < 8:
                    value = f"and_<{p.mask}>({value})"
                terms.append(f"shl<{k * p.width}>({value})" if k else value)
            expr = terms[-1]
            for t in reversed(terms[:-1]):
                expr = f"or_({t}, {expr})"
            stmts.append(f"store_bytes({dst} + {p.offset + j0}, {expr});")
    return stmts


def needs_level_array(head_dim: int, bits: int, lanes: int) -> bool:
    """Whether simd_pack_stmts reads the level array (some plane is narrower than a register)."""
    return any(p.nbytes % lanes for p in planes(head_dim, bits))


def dword_lanes(head_dim: int, bits: int, lanes: int):
    """A faster unpacking for single-plane widths (1, 2, 4, 8 bits) whose plane
    tiles whole registers of 4*lanes bytes: load a register of dwords, and each
    field position s of a dword gives one register of levels by a shift and a
    mask, with no byte widening.  Lane w of group (m, s) then holds a coordinate
    other than the natural order: the fused kernels permute the query (score) or
    the accumulator (accumulate) once per call to match.  Returns the groups
    [{reg, shift, mask, coords}] (mask None when the field ends the dword), or
    None where this does not apply."""
    (p, *rest) = planes(head_dim, bits)
    chunk = 4 * lanes
    if rest or p.nbytes % chunk:
        return None
    groups = []
    for m in range(p.nbytes // chunk):
        for s in range(32 // p.width):
            bit = s * p.width
            coords = [((bit % 8) // p.width) * p.nbytes + m * chunk + 4 * w + bit // 8 for w in range(lanes)]
            groups.append(dict(reg=m, shift=bit, mask=p.mask if bit + p.width < 32 else None, coords=coords))
    return groups
