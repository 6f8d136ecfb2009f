#!/usr/bin/env python3
"""Writes a variant of a GGUF model: the same tensors, bytes for bytes, with
metadata keys added or replaced (gguf-py's reader and writer, so the file is
the same on every machine with the pinned gguf version).

Usage: derive_model.py SRC DST KEY=TYPE:VALUE ...   (TYPE: str, u32, f32)
       ... NAME=tensor_f32:V1,V2,...               (adds a 1-D F32 tensor)

The tests use it for what no small model on PyPI has, for example YaRN rope
scaling on SmolLM2 (llama.rope.scaling.type=str:yarn ...), checked against
llama.cpp on the result."""
import os
import sys

import gguf
import numpy as np

TYPES = {"str": (str, gguf.GGUFValueType.STRING), "u32": (int, gguf.GGUFValueType.UINT32),
         "f32": (float, gguf.GGUFValueType.FLOAT32)}


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    extra, tensors = {}, {}
    for spec in sys.argv[3:]:
        key, _, tv = spec.partition("=")
        t, _, v = tv.partition(":")
        if t == "tensor_f32" and key and v:
            tensors[key] = np.array([float(x) for x in v.split(",")], dtype=np.float32)
            continue
        if t not in TYPES or not key or not v:
            sys.exit(f"derive_model: bad KEY=TYPE:VALUE '{spec}' (types: {', '.join(TYPES)})")
        conv, vt = TYPES[t]
        extra[key] = (conv(v), vt)
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(dst + ".tmp", r.fields["general.architecture"].contents())
    for f in r.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.architecture" or f.name in extra:
            continue  # the header's fields, the key the writer adds itself, and the replaced ones
        sub = f.types[-1] if f.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(f.name, f.contents(), f.types[0], sub_type=sub)
    for key, (v, vt) in extra.items():
        w.add_key_value(key, v, vt)
    for t in r.tensors:
        if t.name not in tensors:
            w.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
    for name, data in tensors.items():
        w.add_tensor(name, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(dst + ".tmp", dst)


if __name__ == "__main__":
    main()
