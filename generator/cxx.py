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


def packed_byte_stmts(head_dim: int, bits: int, levels: str, dst: str) -> list[str]:
    """Statements writing every packed byte of `dst` from the level array `levels`."""
    stmts = []
    for p in planes(head_dim, bits):
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
