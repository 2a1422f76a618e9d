"""The packed byte layout of one quantized vector: the project's file format.

A vector of d levels (each `bits` wide) takes exactly d*bits/8 bytes.  The bits
of a level are split into planes of power-of-two widths, low bits first:

    bits  1    2    3      4    5      6      7        8
    plane 1    2    2+1    4    4+1    4+2    4+2+1    8

Plane p (width w, holding level bits [shift, shift+w)) is n = d*w/8 contiguous
bytes after the planes before it.  Byte j of the plane holds 8/w fields; field k
(bits [k*w, k*w+w) of the byte) belongs to coordinate k*n + j.  So one SIMD load
of R bytes of a plane yields, per field, R consecutive coordinates: 4-bit is
split nibbles (byte j = coord j | coord j+d/2 << 4), 3-bit a 2-bit plane then a
1-bit plane.  docs/packed-format.md describes the same layout for readers.
"""
from __future__ import annotations

from dataclasses import dataclass

PLANE_WIDTHS = {1: (1,), 2: (2,), 3: (2, 1), 4: (4,), 5: (4, 1), 6: (4, 2), 7: (4, 2, 1), 8: (8,)}


@dataclass(frozen=True)
class Plane:
    width: int   # bits per field
    shift: int   # position of these bits within a level
    offset: int  # first byte of the plane within the vector
    nbytes: int  # bytes in the plane

    @property
    def fields(self) -> int:
        return 8 // self.width

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass(frozen=True)
class Field:
    """Where one plane's bits of one coordinate live."""
    plane: Plane
    byte: int    # absolute byte index within the vector
    bit: int     # lowest bit of the field within that byte


def planes(head_dim: int, bits: int) -> list[Plane]:
    if head_dim % 8:
        raise ValueError(f"head_dim must be a multiple of 8, got {head_dim}")
    out, offset, shift = [], 0, 0
    for w in PLANE_WIDTHS[bits]:
        n = head_dim * w // 8
        out.append(Plane(width=w, shift=shift, offset=offset, nbytes=n))
        offset += n
        shift += w
    return out


def code_bytes(head_dim: int, bits: int) -> int:
    return head_dim * bits // 8


def fields_of(head_dim: int, bits: int, coord: int) -> list[Field]:
    """The fields holding coordinate `coord`, one per plane (low bits first)."""
    result = []
    for p in planes(head_dim, bits):
        k, j = divmod(coord, p.nbytes)
        result.append(Field(plane=p, byte=p.offset + j, bit=k * p.width))
    return result


def coords_of_byte(plane: Plane, byte_in_plane: int) -> list[int]:
    """The coordinates whose fields share byte `byte_in_plane` of `plane`, field order."""
    return [k * plane.nbytes + byte_in_plane for k in range(plane.fields)]
