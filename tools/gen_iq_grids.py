#!/usr/bin/env python3
"""Generate src/quant/iq_grids.h: the lattice codebooks of the IQ formats.

The IQ1/IQ2/IQ3 formats store, per group of 8 (IQ1, IQ2) or 4 (IQ3) weights,
an index into a fixed table of lattice points. Those tables are part of the
file format. We take them from the gguf Python package (gguf-py, the reference
reader published with llama.cpp; tested with gguf 0.19.0), which keeps each
table compactly: every point is a run of small codes (2 bits each for the
IQ1/IQ2 grids, one nibble each for the IQ3 grids, lowest bits first, so code j
of a point sits at bit position j * step of the point's bytes), written as
hexadecimal, plus a `grid_map` that turns a code into the stored byte value.

We decode that packing ourselves, check the result against gguf's own decoder
(`init_grid`), and write plain C arrays: table[point][j] is the value of weight j
of that point, before any scale or sign is applied.

Usage (from the repository root, with a Python that has `gguf` installed):

    python3 tools/gen_iq_grids.py                 # writes src/quant/iq_grids.h
    python3 tools/gen_iq_grids.py -o OTHER/PATH.h
    python3 tools/gen_iq_grids.py --check         # exit 1 if the header is stale

The output depends only on the grid data, so regenerating is byte-identical.
"""

import argparse
import math
import os
import sys

import numpy as np
from gguf import quants

HEADER_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "quant", "iq_grids.h")

# (C name, gguf class, C element type, what the values are)
TABLES = [
    ("iq2xxs_grid", quants.IQ2_XXS, "uint8_t", "IQ2_XXS: 256 points of 8 magnitudes in {8, 25, 43}"),
    ("iq2xs_grid", quants.IQ2_XS, "uint8_t", "IQ2_XS: 512 points of 8 magnitudes in {8, 25, 43}"),
    ("iq2s_grid", quants.IQ2_S, "uint8_t", "IQ2_S: 1024 points of 8 magnitudes in {8, 25, 43}"),
    ("iq3xxs_grid", quants.IQ3_XXS, "uint8_t", "IQ3_XXS: 256 points of 4 magnitudes in {4, 12, 20, ..., 52, 62}"),
    ("iq3s_grid", quants.IQ3_S, "uint8_t", "IQ3_S: 512 points of 4 magnitudes in {1, 3, 5, ..., 15}"),
    ("iq1s_grid", quants.IQ1_S, "int8_t", "IQ1_S and IQ1_M: 2048 points of 8 values in {-1, 0, +1}"),
]


def decode(cls):
    """The grid of cls as an int array [points][weights], decoded from grid_hex."""
    n_points, width = cls.grid_shape
    codes_map = list(cls.grid_map)
    bits = math.ceil(math.log2(len(codes_map)))      # bits a code needs
    per_byte = 8 // bits                              # codes stored per byte
    step = 8 // per_byte                              # their spacing in the byte
    raw = bytes.fromhex(cls.grid_hex.decode("ascii"))
    if len(raw) * per_byte != n_points * width:
        raise SystemExit(f"{cls.__name__}: {len(raw)} bytes do not hold {n_points}x{width} codes")
    values = []
    for byte in raw:
        for k in range(per_byte):
            code = (byte >> (k * step)) & ((1 << bits) - 1)
            values.append(int(codes_map[code]))
    grid = np.array(values, dtype=np.int64).reshape(n_points, width)

    # gguf's own decoder must agree with ours
    cls.init_grid()
    theirs = np.asarray(cls.grid, dtype=np.float64).reshape(n_points, width)
    if not np.array_equal(theirs, grid.astype(np.float64)):
        raise SystemExit(f"{cls.__name__}: our decoding differs from gguf's init_grid()")
    if len({tuple(r) for r in grid.tolist()}) != n_points:
        raise SystemExit(f"{cls.__name__}: grid points are not distinct")
    return grid


def emit_table(name, ctype, what, grid):
    n_points, width = grid.shape
    per_line = 4 if width == 8 else 8
    cell = max(len(str(v)) for v in grid.flat)
    idx_w = len(str(n_points - 1))
    out = [f"/* {what} */", f"static const {ctype} {name}[{n_points}][{width}] = {{"]
    for start in range(0, n_points, per_line):
        rows = []
        for p in range(start, min(start + per_line, n_points)):
            rows.append("{" + ",".join(f"{v:>{cell}}" for v in grid[p]) + "}")
        out.append(f"    /* {start:>{idx_w}} */ " + ", ".join(rows) + ",")
    out.append("};")
    return "\n".join(out)


def render():
    parts = [
        "/* GENERATED FILE - DO NOT EDIT BY HAND.",
        " *",
        " * Written by tools/gen_iq_grids.py from the grid tables of the gguf Python",
        " * package (gguf/quants.py, classes IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,",
        " * IQ1_S). Regenerate from the repository root with:",
        " *",
        " *     python3 tools/gen_iq_grids.py",
        " *",
        " * Layout: NAME[i][j] is the value of weight j of lattice point i, before the",
        " * block scale and the sign are applied. Points have 8 weights (IQ1, IQ2) or",
        " * 4 weights (IQ3). The formats store i (see quant/q_iq.c for how each packs",
        " * it); these tables are the file format's codebooks, shared with ggml.",
        " * Included by quant/q_iq.c only.",
        " */",
        "#ifndef NIB_QUANT_IQ_GRIDS_H",
        "#define NIB_QUANT_IQ_GRIDS_H",
        "",
        "#include <stdint.h>",
    ]
    for name, cls, ctype, what in TABLES:
        parts.append("")
        parts.append(emit_table(name, ctype, what, decode(cls)))
    parts.append("")
    parts.append("#endif")
    return "\n".join(parts) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default=HEADER_PATH, help="header to write (default: src/quant/iq_grids.h)")
    ap.add_argument("--check", action="store_true", help="only compare with the existing file")
    args = ap.parse_args()
    text = render()
    if args.check:
        try:
            with open(args.output, "r", encoding="ascii") as f:
                same = f.read() == text
        except FileNotFoundError:
            same = False
        print(f"{args.output}: {'up to date' if same else 'STALE'}")
        return 0 if same else 1
    with open(args.output, "w", encoding="ascii", newline="\n") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
