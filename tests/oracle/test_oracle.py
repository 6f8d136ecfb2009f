#!/usr/bin/env python3
"""The independent oracle: nib's formats and GGUF files against gguf-py.

gguf-py (the `gguf` package on PyPI, maintained with llama.cpp) implements the
ggml formats in numpy, independently of nib's C. This runner loads libnib.so
with ctypes and checks:

  * dequantize: bit-identical (as uint32 patterns) to gguf-py on thousands of
    random blocks per type: random bytes with finite, non-zero scales of both
    signs, plus blocks with every code at its minimum and at its maximum,
    laid out as rows of several blocks;
  * quantize: byte-identical to gguf-py wherever gguf-py can quantize;
  * GGUF files: a file written by gguf-py's GGUFWriter reads back through
    `nib inspect` with every key and tensor, and a file written by nib's writer
    reads back through gguf-py's GGUFReader.

It ends with the line "N passed, N failed, N skipped" and writes the per-type
block counts as a table (the closing note of the format work quotes it).
"""
import argparse
import ctypes
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

import gguf
from gguf import GGMLQuantizationType as Q
from gguf import quants

PASSED = FAILED = SKIPPED = 0


def report(ok, name, detail=""):
    global PASSED, FAILED
    if ok:
        PASSED += 1
        print(f"ok    {name}" + (f"  ({detail})" if detail else ""))
    else:
        FAILED += 1
        print(f"FAIL  {name}  {detail}")
    sys.stdout.flush()


def skip(name, why):
    global SKIPPED
    SKIPPED += 1
    print(f"skip  {name}: {why}")


# ---- the library -----------------------------------------------------------

def load(lib_path):
    lib = ctypes.CDLL(os.path.abspath(lib_path))
    vp, fp, i64 = ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64
    lib.nib_dequantize_row.argtypes = [ctypes.c_int, vp, fp, i64]
    lib.nib_quantize_row.argtypes = [ctypes.c_int, fp, vp, i64]
    lib.nib_type_block_elems.argtypes = [ctypes.c_int]
    lib.nib_type_block_elems.restype = i64
    lib.nib_type_block_bytes.argtypes = [ctypes.c_int]
    lib.nib_type_block_bytes.restype = ctypes.c_size_t
    lib.nib_type_is_supported.argtypes = [ctypes.c_int]
    lib.nib_type_is_supported.restype = ctypes.c_bool
    lib.nib_gguf_writer_new.restype = vp
    lib.nib_gguf_writer_free.argtypes = [vp]
    for name, t in (("u32", ctypes.c_uint32), ("i32", ctypes.c_int32), ("f32", ctypes.c_float),
                    ("u64", ctypes.c_uint64), ("bool", ctypes.c_bool), ("str", ctypes.c_char_p)):
        f = getattr(lib, f"nib_gguf_writer_add_{name}")
        f.argtypes = [vp, ctypes.c_char_p, t, vp]
    lib.nib_gguf_writer_add_array.argtypes = [vp, ctypes.c_char_p, ctypes.c_int, vp, ctypes.c_uint64, vp]
    lib.nib_gguf_writer_add_str_array.argtypes = [vp, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                                                  ctypes.c_uint64, vp]
    lib.nib_gguf_writer_add_tensor.argtypes = [vp, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32,
                                               ctypes.POINTER(ctypes.c_int64), vp, vp]
    lib.nib_gguf_writer_write.argtypes = [vp, ctypes.c_char_p, vp]
    return lib


def nib_dequantize(lib, qtype, raw, n):
    """raw: (rows, row_bytes) uint8 -> (rows, n) float32, through nib, one row per call."""
    out = np.full((raw.shape[0], n), np.nan, dtype=np.float32)  # poisoned
    for r in range(raw.shape[0]):
        row = np.ascontiguousarray(raw[r])
        st = lib.nib_dequantize_row(int(qtype), row.ctypes.data,
                                    out[r].ctypes.data_as(ctypes.POINTER(ctypes.c_float)), n)
        if st != 0:
            raise RuntimeError(f"nib_dequantize_row({qtype.name}) returned {st}")
    return out


def nib_quantize(lib, qtype, x):
    rows, n = x.shape
    be, bb = lib.nib_type_block_elems(int(qtype)), lib.nib_type_block_bytes(int(qtype))
    out = np.full((rows, n // be * bb), 0xA5, dtype=np.uint8)  # poisoned
    for r in range(rows):
        row = np.ascontiguousarray(x[r], dtype=np.float32)
        st = lib.nib_quantize_row(int(qtype), row.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                  out[r].ctypes.data, n)
        if st != 0:
            raise RuntimeError(f"nib_quantize_row({qtype.name}) returned {st}")
    return out


# ---- random valid blocks ---------------------------------------------------------
# Byte offsets of each format's fp16 scale fields (ggml's block layouts).
FP16_FIELDS = {
    Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0],
    Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208],
    Q.IQ2_XXS: [0], Q.IQ2_XS: [0], Q.IQ2_S: [0], Q.IQ3_XXS: [0], Q.IQ3_S: [0], Q.IQ1_S: [0],
    Q.IQ4_NL: [0], Q.IQ4_XS: [0], Q.TQ1_0: [52], Q.TQ2_0: [64],
    Q.IQ1_M: [], Q.MXFP4: [],
}


def random_scales(rng, shape):
    """finite, non-zero fp16 of both signs, magnitudes 2^-14 .. 2^4 (normal range)."""
    mag = np.exp2(rng.uniform(-14, 4, size=shape))
    sign = np.where(rng.integers(0, 2, size=shape) == 1, -1.0, 1.0)
    return (mag * sign).astype(np.float16)


def random_blocks(rng, qtype, n_blocks):
    """(n_blocks, block_bytes) uint8: random codes, valid scales; the first two
    blocks have every code byte at 0x00 and at 0xff (minimal/maximal codes)."""
    be, bb = quants.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, bb), dtype=np.uint8)
    raw[0, :] = 0x00
    raw[1, :] = 0xff
    for off in FP16_FIELDS[qtype]:
        raw[:, off:off + 2] = random_scales(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    if qtype == Q.IQ1_M:
        # the fp16 scale is the top nibble of each of the four 16-bit scale words
        h = random_scales(rng, n_blocks).view(np.uint16)
        for k in range(4):
            col = 48 + 2 * k + 1
            raw[:, col] = (raw[:, col] & 0x0f) | (((h >> (4 * k)) & 0xf) << 4).astype(np.uint8)
    if qtype == Q.MXFP4:
        raw[:, 0] = rng.integers(0, 253, size=n_blocks)  # E8M0 up to 2^124: 12 x 2^124 is still a finite fp32
    return raw


# ---- tests -------------------------------------------------------------------------

# Types gguf-py dequantizes (everything it has a class for, among nib's types).
DEQUANT_TYPES = [Q.BF16, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K,
                 Q.Q6_K, Q.IQ2_XXS, Q.IQ2_XS, Q.IQ2_S, Q.IQ3_XXS, Q.IQ3_S, Q.IQ1_S, Q.IQ1_M, Q.IQ4_NL,
                 Q.IQ4_XS, Q.TQ1_0, Q.TQ2_0, Q.MXFP4]
# Types gguf-py quantizes (ggml's reference quantizers, in numpy).
QUANT_TYPES = [Q.BF16, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.TQ1_0, Q.TQ2_0, Q.MXFP4]

COUNTS = {}  # type name -> {"dequant": blocks, "quant": blocks}


def count(qtype, what, n):
    COUNTS.setdefault(qtype.name, {"dequant": 0, "quant": 0})[what] += n


def first_mismatch(a, b):
    au, bu = a.view(np.uint32), b.view(np.uint32)
    bad = np.argwhere(au != bu)
    if len(bad) == 0:
        return None
    r, c = bad[0]
    return f"{len(bad)} values differ; first at row {r} col {c}: nib {a[r, c]!r} gguf {b[r, c]!r}"


def test_dequantize(lib, rng, qtype, blocks_total):
    be, bb = quants.GGML_QUANT_SIZES[qtype]
    passes = []  # (rows of raw bytes, elements per row)
    if qtype == Q.BF16:
        # every bf16 pattern but NaNs, as rows of 256
        pats = np.arange(65536, dtype=np.uint32)
        pats = pats[~np.isnan((pats << 16).view(np.float32))].astype(np.uint16)
        pats = pats[: len(pats) // 256 * 256]
        passes.append((pats.view(np.uint8).reshape(-1, 512), 256))
    else:
        # rows of 1, 3 and 8 blocks
        for per_row in (1, 3, 8):
            rows = max(1, (blocks_total // 3) // per_row)
            blk = random_blocks(rng, qtype, rows * per_row)
            passes.append((blk.reshape(rows, per_row * bb), per_row * be))
    nblocks = 0
    for raw, n in passes:
        ours = nib_dequantize(lib, qtype, raw, n)
        theirs = quants.dequantize(raw, qtype).astype(np.float32).reshape(raw.shape[0], n)
        msg = first_mismatch(ours, theirs)
        if msg:
            report(False, f"dequantize {qtype.name} bit-identical to gguf-py", msg)
            return
        nblocks += raw.shape[0] * (n // be)
    count(qtype, "dequant", nblocks)
    report(True, f"dequantize {qtype.name} bit-identical to gguf-py", f"{nblocks} blocks")


def test_f16(lib, rng):
    # F16 is numpy's own float16: every non-NaN pattern
    pats = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    pats = pats[~np.isnan(pats.view(np.float16))]
    pats = pats[: len(pats) // 256 * 256]
    raw = pats.view(np.uint8).reshape(-1, 512)
    ours = nib_dequantize(lib, Q.F16, raw, 256)
    theirs = pats.view(np.float16).astype(np.float32).reshape(-1, 256)
    msg = first_mismatch(ours, theirs)
    report(msg is None, "dequantize F16 identical to numpy float16 (every non-NaN pattern)", msg or "")
    count(Q.F16, "dequant", pats.size)
    x = (rng.standard_normal((64, 256)) * np.exp2(rng.uniform(-20, 15, size=(64, 1)))).astype(np.float32)
    ours_q = nib_quantize(lib, Q.F16, x)
    theirs_q = x.astype(np.float16).view(np.uint8).reshape(64, -1)
    ok = np.array_equal(ours_q, theirs_q)
    report(ok, "quantize F16 identical to numpy float16 (round to nearest even, subnormals)",
           "" if ok else f"{np.count_nonzero(ours_q != theirs_q)} bytes differ")
    count(Q.F16, "quant", x.size)


def normal_rows(rng, rows, n):
    """normal data with a different scale per row, some rows with an outlier."""
    x = rng.standard_normal((rows, n)) * np.exp2(rng.uniform(-8, 4, size=(rows, 1)))
    x[::3, rng.integers(0, n)] *= 20.0
    return x.astype(np.float32)


def test_quantize(lib, rng, qtype, rows):
    be, bb = quants.GGML_QUANT_SIZES[qtype]
    n = be * 8 if be > 1 else 256
    x = normal_rows(rng, rows, n)
    # exact ties: values on a grid of halves hit the rounding rule of every quantizer
    x[: rows // 4] = (rng.integers(-16, 17, size=(rows // 4, n)) / 2.0).astype(np.float32)
    ours = nib_quantize(lib, qtype, x)
    theirs = quants.quantize(x, qtype).reshape(rows, -1)
    if not np.array_equal(ours, theirs):
        bad = np.argwhere(ours != theirs)[0]
        report(False, f"quantize {qtype.name} byte-identical to gguf-py",
               f"{np.count_nonzero(ours != theirs)} bytes differ; first row {bad[0]} byte {bad[1]}")
        return
    nblocks = rows * (n // be)
    count(qtype, "quant", nblocks)
    report(True, f"quantize {qtype.name} byte-identical to gguf-py", f"{nblocks} blocks")


# ---- GGUF files both ways ---------------------------------------------------------

def test_gguf_from_gguf_py(nib, rng, tmp):
    path = os.path.join(tmp, "from_gguf_py.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_uint32("llama.block_count", 7)
    w.add_int32("test.i32", -5)
    w.add_float32("test.f32", 0.125)
    w.add_uint64("test.u64", 1 << 40)
    w.add_bool("test.bool", True)
    w.add_string("test.str", "hello world")
    w.add_array("test.ints", [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5])
    w.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "a", "b"])
    tensors = {}
    for i, qtype in enumerate([Q.F32, Q.F16, Q.Q4_0, Q.Q8_0, Q.Q4_K, Q.Q6_K, Q.IQ4_XS, Q.MXFP4]):
        be, bb = quants.GGML_QUANT_SIZES[qtype]
        ne0, ne1 = 256, 3 + i
        if qtype == Q.F32:
            data = rng.standard_normal((ne1, ne0)).astype(np.float32)
        elif qtype == Q.F16:
            data = rng.standard_normal((ne1, ne0)).astype(np.float16)
        else:
            data = random_blocks(rng, qtype, ne1 * ne0 // be).reshape(ne1, ne0 // be * bb)
        name = f"blk.{i}.{qtype.name.lower()}.weight"
        w.add_tensor(name, data, raw_dtype=qtype if qtype not in (Q.F32, Q.F16) else None)
        tensors[name] = (qtype, ne0, ne1, data.nbytes)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    p = subprocess.run([nib, "inspect", path], capture_output=True, text=True)
    ok = p.returncode == 0
    report(ok, "nib inspect reads a file gguf-py wrote", p.stderr.strip())
    if not ok:
        return
    out = p.stdout
    missing = [k for k in ("llama.block_count", "test.i32", "test.f32", "test.u64", "test.bool",
                           '"hello world"', "test.ints",
                           "tokenizer.ggml.tokens", '[string x 4]', "1099511627776", "0.125", "true")
               if k not in out]
    report(not missing, "every metadata key and value appears in nib inspect", f"missing {missing}")
    bad = []
    for name, (qtype, ne0, ne1, nbytes) in tensors.items():
        line = next((l for l in out.splitlines() if f" {name} " in l), None)
        if line is None or qtype.name not in line or f"{ne0} x {ne1}" not in line or f" {nbytes} " not in line:
            bad.append((name, line))
    report(not bad, "every tensor's name, type, shape and bytes appear in nib inspect", f"{bad}")


def test_gguf_to_gguf_py(lib, rng, tmp):
    path = os.path.join(tmp, "from_nib.gguf").encode()
    w = lib.nib_gguf_writer_new()
    lib.nib_gguf_writer_add_str(w, b"general.architecture", b"llama", None)
    lib.nib_gguf_writer_add_u32(w, b"llama.context_length", 8192, None)
    lib.nib_gguf_writer_add_f32(w, b"llama.rope.freq_base", 500000.0, None)
    lib.nib_gguf_writer_add_bool(w, b"test.flag", False, None)
    ints = np.array([7, -8, 9], dtype=np.int32)
    lib.nib_gguf_writer_add_array(w, b"test.ints", 5, ints.ctypes.data, 3, None)
    strs = (ctypes.c_char_p * 3)(b"x", b"", "\u00e9t\u00e9".encode())
    lib.nib_gguf_writer_add_str_array(w, b"test.strs", strs, 3, None)
    data = random_blocks(rng, Q.Q4_K, 12).reshape(3, 4 * 144)
    ne = (ctypes.c_int64 * 2)(1024, 3)
    lib.nib_gguf_writer_add_tensor(w, b"q4k", int(Q.Q4_K), 2, ne, data.ctypes.data, None)
    f32 = rng.standard_normal(33).astype(np.float32)
    ne1 = (ctypes.c_int64 * 1)(33)
    lib.nib_gguf_writer_add_tensor(w, b"norm", int(Q.F32), 1, ne1, f32.ctypes.data, None)
    st = lib.nib_gguf_writer_write(w, path, None)
    lib.nib_gguf_writer_free(w)
    report(st == 0, "nib writes a GGUF file", f"status {st}")
    r = gguf.GGUFReader(path.decode())
    f = r.fields
    checks = [
        bytes(f["general.architecture"].parts[-1]).decode() == "llama",
        int(f["llama.context_length"].parts[-1][0]) == 8192,
        float(f["llama.rope.freq_base"].parts[-1][0]) == 500000.0,
        bool(f["test.flag"].parts[-1][0]) is False,
        [int(f["test.ints"].parts[i][0]) for i in f["test.ints"].data] == [7, -8, 9],
        [bytes(f["test.strs"].parts[i]).decode() for i in f["test.strs"].data] == ["x", "", "\u00e9t\u00e9"],
    ]
    report(all(checks), "gguf-py reads nib's metadata back", f"checks {checks}")
    t = {x.name: x for x in r.tensors}
    ok = ("q4k" in t and t["q4k"].tensor_type == Q.Q4_K and list(t["q4k"].shape) == [1024, 3]
          and np.array_equal(np.asarray(t["q4k"].data).reshape(-1).view(np.uint8), data.reshape(-1))
          and "norm" in t and np.array_equal(np.asarray(t["norm"].data).reshape(-1), f32))
    report(ok, "gguf-py reads nib's tensors back (types, shapes, bytes)")


def split_with_gguf_py(src, dst, **split_args):
    """Writes src again through gguf-py's writer as split files (dst's stem
    -00001-of-0000N.gguf, ...); returns their paths."""
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(dst, r.fields["general.architecture"].contents(), **split_args)
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.architecture":
            continue  # the header's fields, and the key the writer adds itself
        sub = f.types[-1] if f.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(f.name, f.contents(), f.types[0], sub_type=sub)
    for t in r.tensors:
        w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    stem = os.path.splitext(dst)[0]
    return sorted(os.path.join(os.path.dirname(dst), f) for f in os.listdir(os.path.dirname(dst))
                  if f.startswith(os.path.basename(stem) + "-0"))


def tensor_lines(out):
    """name, type, shape and bytes of each tensor row of `nib inspect`."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"\s+\d+\s+(\S+)\s+(\S+)\s+(\d+(?: x \d+)*)\s+(\d+)\s+\d+(\s+\d+)?$", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    return rows


def test_split_from_gguf_py(nib, tmp):
    """Models split by gguf-py's writer (the layout of llama.cpp's gguf-split)
    run from their first file exactly as the one file does: the same tensors in
    `nib inspect`, the same greedy text; a later split names the first."""
    cases = [("tiny-llama", "Q4_K_M", {"split_max_tensors": 7}),
             ("tiny-qwen2", "Q8_0", {"split_max_size": 300_000})]
    for shape, ftype, how in cases:
        one = os.path.join(tmp, f"one-{shape}.gguf")
        p = subprocess.run([nib, "synth", "--shape", shape, "--type", ftype, "-o", one], capture_output=True, text=True)
        if p.returncode != 0:
            report(False, f"nib synth {shape} {ftype}", p.stderr.strip())
            continue
        d = os.path.join(tmp, f"split-{shape}")
        os.mkdir(d)
        files = split_with_gguf_py(one, os.path.join(d, f"{shape}.gguf"), **how)
        what = f"{shape} {ftype} in {len(files)} files by gguf-py ({how})"
        if len(files) < 3:
            report(False, f"{what}: gguf-py wrote at least 3 splits", f"{files}")
            continue
        ins = [subprocess.run([nib, "inspect", f], capture_output=True, text=True) for f in (one, files[0])]
        ok = all(x.returncode == 0 for x in ins) and f"split 1 of {len(files)}" in ins[1].stdout
        a, b = (tensor_lines(x.stdout) for x in ins) if ok else ({}, {})
        report(ok and a == b and len(a) > 10, f"{what}: nib inspect lists the one file's tensors",
               f"{ins[1].stderr.strip()} {len(a)} vs {len(b)} rows")
        args = ["run", "-p", "hello world", "-n", "24", "--temp", "0", "-t", "2"]
        runs = [subprocess.run([nib] + args[:1] + [f] + args[1:], capture_output=True) for f in (one, files[0])]
        ok = all(x.returncode == 0 for x in runs) and len(runs[0].stdout) > 0
        ok = ok and runs[0].stdout == runs[1].stdout and b" split files" in runs[1].stderr
        report(ok, f"{what}: nib run gives the one file's greedy text",
               "" if ok else runs[1].stderr.decode(errors="replace").strip()[-300:])
        p = subprocess.run([nib, "run", files[1], "-p", "x"], capture_output=True, text=True)
        ok = p.returncode != 0 and f"is split 2 of {len(files)}" in p.stderr and os.path.basename(files[0]) in p.stderr
        report(ok, f"{what}: the second split names the first", "" if ok else p.stderr.strip())


def test_real_models(lib, models_dir):
    """Real weights: rows of every quantized tensor of the test models, dequantized
    by nib and by gguf-py, must be bit-identical (real scales, real codes)."""
    paths = [os.path.join(models_dir, f) for f in sorted(os.listdir(models_dir))
             if f.endswith(".gguf")] if os.path.isdir(models_dir) else []
    if not paths:
        skip("real model tensors", f"no models in {models_dir} (tools/fetch_models.sh fetches them)")
        return
    for path in paths:
        r = gguf.GGUFReader(path)
        n_tensors = n_rows = 0
        bad = []
        for t in r.tensors:
            qtype = Q(int(t.tensor_type))
            if qtype in (Q.F32, Q.F16) or qtype not in quants.GGML_QUANT_SIZES:
                continue
            raw = np.asarray(t.data)
            raw = raw.reshape(raw.shape[0], -1) if raw.ndim > 1 else raw.reshape(1, -1)
            rows = raw[: 48]  # the first rows of each tensor: every tensor, bounded time
            be, bb = quants.GGML_QUANT_SIZES[qtype]
            n = rows.shape[1] // bb * be
            ours = nib_dequantize(lib, qtype, np.ascontiguousarray(rows), n)
            theirs = quants.dequantize(rows, qtype).astype(np.float32).reshape(rows.shape[0], n)
            msg = first_mismatch(ours, theirs)
            if msg:
                bad.append(f"{t.name}: {msg}")
            n_tensors += 1
            n_rows += rows.shape[0]
            count(qtype, "dequant", rows.shape[0] * (n // be))
        report(not bad, f"real tensors of {os.path.basename(path)} bit-identical to gguf-py",
               f"{n_tensors} tensors, {n_rows} rows" if not bad else "; ".join(bad[:3]))


def test_synth_files(lib, nib, tmp):
    """`nib synth` files through gguf-py: every tensor dequantizes (gguf-py's numpy
    code) to finite values, bit-identical to nib's; matrices have std near
    1/sqrt(n_in); the vocabulary has one token per embedding row."""
    for shape in ("tiny-llama", "tiny-qwen2"):
        for ftype in ("F16", "Q8_0", "Q4_0", "Q4_K_M", "Q3_K_M", "Q2_K"):
            path = os.path.join(tmp, f"synth-{shape}-{ftype}.gguf")
            p = subprocess.run([nib, "synth", "--shape", shape, "--type", ftype, "-o", path],
                               capture_output=True, text=True)
            if p.returncode != 0:
                report(False, f"nib synth {shape} {ftype}", p.stderr.strip())
                continue
            r = gguf.GGUFReader(path)
            n_tokens = len(r.fields["tokenizer.ggml.tokens"].data)
            bad = []
            for t in r.tensors:
                qtype = Q(int(t.tensor_type))
                ne0 = int(t.shape[0])
                raw = np.asarray(t.data)
                x = raw.astype(np.float32) if qtype in (Q.F32, Q.F16) else \
                    quants.dequantize(raw, qtype).astype(np.float32)
                x = x.reshape(-1, ne0)
                if not np.isfinite(x).all():
                    bad.append(f"{t.name}: not finite")
                elif len(t.shape) == 2 and not 0.75 < x.std() * np.sqrt(ne0) < 1.33:
                    bad.append(f"{t.name}: std {x.std():.4g} for n_in {ne0}")
                elif qtype not in (Q.F32, Q.F16):
                    rows = np.ascontiguousarray(raw.reshape(x.shape[0], -1)[:16])
                    msg = first_mismatch(nib_dequantize(lib, qtype, rows, ne0), x[:16])
                    if msg:
                        bad.append(f"{t.name}: nib vs gguf-py: {msg}")
                if t.name == "token_embd.weight" and x.shape[0] != n_tokens:
                    bad.append(f"{n_tokens} tokens for {x.shape[0]} embedding rows")
            report(not bad, f"nib synth {shape} {ftype}: gguf-py dequantizes every tensor, finite, std ok",
                   "; ".join(bad[:3]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--nib", required=True)
    ap.add_argument("--blocks", type=int, default=6000, help="random blocks per type for dequantize")
    ap.add_argument("--table", help="write the per-type block counts (markdown) here")
    ap.add_argument("--models", default=os.environ.get("NIB_MODELS_DIR", "models"),
                    help="folder of real .gguf models whose tensors are compared too")
    args = ap.parse_args()
    lib = load(args.lib)
    rng = np.random.default_rng(20261130)
    print(f"gguf-py {getattr(gguf, '__version__', '?')}, numpy {np.__version__}")

    for qtype in DEQUANT_TYPES:
        if not lib.nib_type_is_supported(int(qtype)):
            report(False, f"nib supports {qtype.name}")
            continue
        test_dequantize(lib, rng, qtype, args.blocks)
    test_f16(lib, rng)
    for qtype in QUANT_TYPES:
        test_quantize(lib, rng, qtype, rows=512)
    for qtype in (Q.Q8_1, Q.Q8_K):
        skip(f"dequantize {qtype.name}", "gguf-py has no code for this activation format")
    for qtype in (Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.Q8_K, Q.IQ4_NL, Q.IQ4_XS):
        skip(f"quantize {qtype.name}", "gguf-py cannot quantize it (covered by round-trip bounds in test_formats)")

    test_real_models(lib, args.models)
    with tempfile.TemporaryDirectory() as tmp:
        test_gguf_from_gguf_py(args.nib, rng, tmp)
        test_gguf_to_gguf_py(lib, rng, tmp)
        test_synth_files(lib, args.nib, tmp)
        test_split_from_gguf_py(args.nib, tmp)

    lines = ["| type | blocks dequantized, bit-identical | blocks quantized, byte-identical |", "|---|---|---|"]
    for name, c in COUNTS.items():
        lines.append(f"| {name} | {c['dequant'] or '-'} | {c['quant'] or '-'} |")
    print("\n".join(lines))
    if args.table:
        with open(args.table, "w") as fh:
            fh.write("\n".join(lines) + "\n")
    print(f"{PASSED} passed, {FAILED} failed, {SKIPPED} skipped")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
