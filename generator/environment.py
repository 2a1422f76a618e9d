"""The one Jinja2 environment of the generator: loader, strictness and helpers."""
from __future__ import annotations

import struct
from pathlib import Path

import jinja2
import jinja2.meta

import cxx
import hadamard_cxx
import int_layout
from layout import planes, segment_index, segments

TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"


def float_literal(x: float) -> str:
    """Shortest text that reads back as the same float32 (the value rounded to float first)."""
    f = struct.unpack("<f", struct.pack("<f", x))[0]
    for digits in range(6, 10):
        text = f"{f:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == f:
            break
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def make_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["float_literal"] = float_literal
    env.globals.update(
        level_expr=cxx.level_expr,
        packed_byte_stmts=cxx.packed_byte_stmts,
        simd_centroids=cxx.simd_centroids,
        simd_quantize_stmts=cxx.simd_quantize_stmts,
        grid_search=cxx.grid_search,
        simd_magnitudes=cxx.simd_magnitudes,
        scalar_dense_stmts=hadamard_cxx.scalar_dense_stmts,
        simd_dense_stmts=hadamard_cxx.simd_dense_stmts,
        simd_sum=hadamard_cxx.simd_sum,
        segment_index=segment_index,
        simd_pack_stmts=cxx.simd_pack_stmts,
        dword_lanes=cxx.dword_lanes,
        byte_registers=int_layout.byte_registers,
        byte_levels_expr=int_layout.byte_levels_expr,
        has_residual_query=int_layout.has_residual_query,
        natural_byte_lanes=int_layout.natural_byte_lanes,
        planes=planes,
        segments=segments,
    )
    return env


def referenced_templates(env: jinja2.Environment, name: str) -> list[str]:
    """`name` and every template it includes or imports, recursively."""
    seen, todo = [], [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.append(current)
        source = env.loader.get_source(env, current)[0]
        todo.extend(t for t in jinja2.meta.find_referenced_templates(env.parse(source)) if t)
    return sorted(seen)
