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
1-bit plane.

A fractional rate b + f/8 (f in 1..7) splits the vector into two segments: the
first d*f/8 coordinates at b+1 bits, the rest at b bits, each packed by the rule
above as if it were a vector of its own, one after the other.  d*f/8 must be a
multiple of 8 so that every plane is whole bytes.  docs/packed-format.md
describes the same layout for readers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

PLANE_WIDTHS = {1: (1,), 2: (2,), 3: (2, 1), 4: (4,), 5: (4, 1), 6: (4, 2), 7: (4, 2, 1), 8: (8,)}
MIN_RATE, MAX_RATE = 8, 64  # in eighths of a bit


@dataclass(frozen=True, order=True)
class Rate:
    """Bits per coordinate, in eighths: 32 is 4 bits, 28 is 3.5."""
    eighths: int

    @staticmethod
    def parse(text: str) -> "Rate":
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"bit rate '{text}' is not a number")
        if not math.isfinite(value):
            raise ValueError(f"bit rate {text} is not supported: allowed 1..8 in steps of 1/8 (e.g. 3.5, 2.25)")
        eighths = round(value * 8)
        if abs(eighths - value * 8) > 1e-9 or not MIN_RATE <= eighths <= MAX_RATE:
            raise ValueError(f"bit rate {text} is not supported: allowed 1..8 in steps of 1/8 (e.g. 3.5, 2.25)")
        return Rate(eighths)

    @property
    def whole(self) -> bool:
        return self.eighths % 8 == 0

    @property
    def low_bits(self) -> int:
        return self.eighths // 8

    @property
    def text(self) -> str:
        """As written on the command line: 4, 3.5, 2.125."""
        return str(self.low_bits) if self.whole else f"{self.eighths / 8:g}"

    @property
    def name(self) -> str:
        """As written in identifiers and file names: 4, 3_5, 2_125."""
        return self.text.replace(".", "_")

    def __str__(self) -> str:
        return self.text


def as_rate(bits: "Rate | int") -> Rate:
    """A Rate, or whole bits as one."""
    if isinstance(bits, Rate):
        return bits
    if not isinstance(bits, int):
        raise TypeError(f"bits must be a Rate or an int, got {bits!r}")
    return Rate(8 * bits)


@dataclass(frozen=True)
class Segment:
    first: int   # first coordinate
    count: int   # coordinates
    bits: int
    offset: int  # first byte within the vector


def segments(head_dim: int, bits) -> list[Segment]:
    """The vector's segments, high-rate first (one segment for whole bits)."""
    rate = as_rate(bits)
    if head_dim % 8:
        raise ValueError(f"head_dim must be a multiple of 8, got {head_dim}")
    frac = rate.eighths % 8
    high = head_dim * frac // 8
    if head_dim * frac % 64:
        steps = sorted({f for f in range(8) if head_dim * f % 64 == 0})
        allowed = ", ".join(f"+{f}/8" for f in steps if f) or "none"
        raise ValueError(f"bit rate {rate} at head dim {head_dim} would put {head_dim * frac / 8:g} coordinates at "
                         f"{rate.low_bits + 1} bits; fractional rates need a multiple of 8 "
                         f"(fractions allowed at head dim {head_dim}: {allowed})")
    out = []
    if high:
        out.append(Segment(0, high, rate.low_bits + 1, 0))
    if head_dim - high:
        out.append(Segment(high, head_dim - high, rate.low_bits, high * (rate.low_bits + 1) // 8))
    return out


@dataclass(frozen=True)
class Plane:
    width: int   # bits per field
    shift: int   # position of these bits within a level
    offset: int  # first byte of the plane within the vector
    nbytes: int  # bytes in the plane
    first: int   # first coordinate of the plane's segment

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


def segment_planes(seg: Segment) -> list[Plane]:
    out, offset, shift = [], seg.offset, 0
    for w in PLANE_WIDTHS[seg.bits]:
        n = seg.count * w // 8
        out.append(Plane(width=w, shift=shift, offset=offset, nbytes=n, first=seg.first))
        offset += n
        shift += w
    return out


def planes(head_dim: int, bits) -> list[Plane]:
    return [p for seg in segments(head_dim, bits) for p in segment_planes(seg)]


def code_bytes(head_dim: int, bits) -> int:
    return head_dim * as_rate(bits).eighths // 64


def segment_index(head_dim: int, bits, coord: int) -> int:
    """Which segment (0 = the first) holds coordinate `coord`."""
    return next(i for i, s in enumerate(segments(head_dim, bits)) if s.first <= coord < s.first + s.count)


def segment_of(head_dim: int, bits, coord: int) -> Segment:
    return segments(head_dim, bits)[segment_index(head_dim, bits, coord)]


def fields_of(head_dim: int, bits, coord: int) -> list[Field]:
    """The fields holding coordinate `coord`, one per plane of its segment (low bits first)."""
    result = []
    for p in segment_planes(segment_of(head_dim, bits, coord)):
        k, j = divmod(coord - p.first, p.nbytes)
        result.append(Field(plane=p, byte=p.offset + j, bit=k * p.width))
    return result


def coords_of_byte(plane: Plane, byte_in_plane: int) -> list[int]:
    """The coordinates whose fields share byte `byte_in_plane` of `plane`, field order."""
    return [plane.first + k * plane.nbytes + byte_in_plane for k in range(plane.fields)]


# What SIMD unpacking needs of a layout (lanes: floats per register).

def register_parts(head_dim: int, bits, first: int, lanes: int) -> list[tuple[int, Segment, int, int]]:
    """The segments a register of coordinates first..first+lanes-1 spans: (index, segment, lo lane, hi lane)."""
    out = []
    for i, s in enumerate(segments(head_dim, bits)):
        lo, hi = max(s.first - first, 0), min(s.first + s.count - first, lanes)
        if lo < hi:
            out.append((i, s, lo, hi))
    return out


def small_field_fits(p: Plane, base: int, lo: int, hi: int, lanes: int) -> bool:
    """Whether lanes lo..hi-1 of the register of coordinates base.. read plane p with
    one small-field load (a whole register from a plane of fewer bytes than lanes,
    repeating evenly) instead of full-width field loads."""
    local = base + lo - p.first
    return (lo, hi) == (0, lanes) and p.nbytes < lanes and lanes % p.nbytes == 0 and local % lanes == 0


def simd_read_size(head_dim: int, bits, lanes: int) -> int:
    """Bytes the unpacking of one vector may read: its code, or a register's
    worth when the code is shorter (the kernel then copies it into a padded buffer)."""
    return max(code_bytes(head_dim, bits), lanes)


def simd_needs_padding(head_dim: int, bits, lanes: int) -> bool:
    """Whether the code is shorter than one load and some register's plane is read by
    full-width field loads (not a small field), which would read past the code."""
    if code_bytes(head_dim, bits) >= lanes:
        return False
    return any(not small_field_fits(p, first, lo, hi, lanes)
               for first in range(0, head_dim, lanes)
               for _, seg, lo, hi in register_parts(head_dim, bits, first, lanes)
               for p in segment_planes(seg))


def needs_level_array(head_dim: int, bits, lanes: int) -> bool:
    """Whether SIMD packing reads the level array (some plane is narrower than a register)."""
    return any(p.nbytes % lanes or p.first % lanes for p in planes(head_dim, bits))
