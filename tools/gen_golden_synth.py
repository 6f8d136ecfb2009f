#!/usr/bin/env python3
"""Golden logits from llama.cpp for architectures no small model on PyPI has:
random-weight models written by `nib synth` (deterministic for a shape, type
and seed), optionally with metadata changed by tools/derive_model.py, run by
llama.cpp (llama-cpp-python) on a fixed random sequence of token ids.

Writes tests/golden/synth/CASE.json: the case, the file's sha256, the ids, and
per position llama.cpp's top-20 logits and log-sum-exp; tests/e2e/test_synth.py
holds nib to them. Usage (the llama.cpp venv, `make golden`):
    python tools/gen_golden_synth.py --nib build/nib"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import llama_cpp
import numpy as np

from gen_golden_models import sha256_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = 20
N_IDS = 300

LONGROPE = ["phi3.rope.dimension_count=u32:48", "phi3.rope.scaling.attn_factor=f32:1.19",
            "rope_factors_short.weight=tensor_f32:" + ",".join(f"{1 + 0.05 * i:.2f}" for i in range(24)),
            "rope_factors_long.weight=tensor_f32:" + ",".join(f"{1 + 0.9 * i:.2f}" for i in range(24))]

def GRANITE(arch):
    return [f"{arch}.embedding_scale=f32:3", f"{arch}.residual_scale=f32:0.5", f"{arch}.attention.scale=f32:0.25",
            f"{arch}.logit_scale=f32:0.8"]


# name: (shape, type, seed, derive_model.py KEY=TYPE:VALUE ...)
CASES = {
    # Gemma 2's caps (50 and 30) hardly bend random scores: smaller ones make a
    # missing or misplaced soft-cap show (KL 3e-3 against 1.5e-4 when right)
    "tiny-gemma2-Q8_0-caps5-3": ("tiny-gemma2", "Q8_0", 11,
                                 ["gemma2.attn_logit_softcapping=f32:5", "gemma2.final_logit_softcapping=f32:3"]),
    "tiny-gemma2-Q4_K_M": ("tiny-gemma2", "Q4_K_M", 12, []),
    # RoPE's attention factor (cos and sin scaled, whatever the scaling type): q.k times 1.69
    "tiny-llama-Q8_0-attn-factor": ("tiny-llama", "Q8_0", 15, ["llama.rope.scaling.attn_factor=f32:1.3"]),
    # YaRN (factor 4 over 64 positions, so that the 300 here are far past it), NeoX pairs
    "tiny-qwen2-Q8_0-yarn": ("tiny-qwen2", "Q8_0", 17, ["qwen2.rope.scaling.type=str:yarn",
                                                               "qwen2.rope.scaling.factor=f32:4",
                                                               "qwen2.rope.scaling.original_context_length=u32:64"]),
    # Phi-3: Q, K and V fused, gate and up fused
    "tiny-phi3-Q8_0": ("tiny-phi3", "Q8_0", 18, []),
    # Phi-3.5 / Phi-4-mini: LongRoPE's factors (the long ones past original_context_length, here
    # 512 < the 1024 positions of the context; the short ones with 4096), its cos/sin scale, and
    # 48 of 64 head dimensions rotated (Phi-4-mini rotates 96 of 128)
    "tiny-phi3-Q4_0-longrope-long": ("tiny-phi3", "Q4_0", 19, LONGROPE + ["phi3.rope.scaling.original_context_length=u32:512"]),
    "tiny-phi3-Q4_0-longrope-short": ("tiny-phi3", "Q4_0", 20, LONGROPE + ["phi3.rope.scaling.original_context_length=u32:4096"]),
    # mixtures of experts: Mixtral's layout (llama, 4 experts, top-2) and Qwen3-MoE's (8, top-3)
    "tiny-mixtral-Q4_0": ("tiny-mixtral", "Q4_0", 13, []),
    "tiny-qwen3moe-Q8_0": ("tiny-qwen3moe", "Q8_0", 14, []),
    # Qwen3: QK-norm per head, NeoX RoPE
    "tiny-qwen3-Q8_0": ("tiny-qwen3", "Q8_0", 26, []),
    # SmolLM3: no RoPE in every fourth layer (8 layers: 3 and 7)
    "tiny-smollm3-Q8_0": ("tiny-smollm3", "Q8_0", 24, []),
    # OLMo 2: norms only after attention and the FFN, QK-norm over the whole projections
    "tiny-olmo2-Q8_0": ("tiny-olmo2", "Q8_0", 25, []),
    # Granite: its four scales, at values that show (the 3.1 2B's divide the logits by 8, which
    # flattens a random model's): embeddings x3, block outputs x0.5, q.k x0.25, logits / 0.8
    "tiny-granite-Q8_0-scales": ("tiny-granite", "Q8_0", 22, GRANITE("granite")),
    "tiny-granitemoe-Q8_0-scales": ("tiny-granitemoe", "Q8_0", 23, GRANITE("granitemoe")),
    # gpt-oss: attention sinks, biases everywhere, the window on even layers, YaRN, the router's
    # softmax over its chosen logits, the clamped SwiGLU
    "tiny-gpt-oss-Q8_0": ("tiny-gpt-oss", "Q8_0", 27, []),
    # the same with router biases of a size that changes choices (synth's are 0.02: left out,
    # nothing shows)
    "tiny-gpt-oss-Q8_0-router-bias": ("tiny-gpt-oss", "Q8_0", 28, [
        f"blk.{il}.ffn_gate_inp.bias=tensor_f32:" + ",".join(f"{(-1) ** e * 0.3 * e:.1f}" for e in range(8))
        for il in range(2)]),
    # OLMoE: the top-k weights not renormalised, QK-norm over the whole projections
    "tiny-olmoe-Q8_0": ("tiny-olmoe", "Q8_0", 21, []),
}
# routed models: a token whose router has two experts nearly tied may take
# the other one in either engine, and its logits then differ a lot; they are
# judged by the median position and the share of such positions (test_synth.py)
ROUTED = {"tiny-mixtral", "tiny-qwen3moe", "tiny-olmoe", "tiny-granitemoe", "tiny-gpt-oss"}


def build(nib, case, tmp):
    """The case's model file (nib synth, then derive_model.py); its path."""
    shape, ftype, seed, keys = CASES[case]
    path = os.path.join(tmp, case + ".synth.gguf")
    subprocess.run([nib, "synth", "--shape", shape, "--type", ftype, "--seed", str(seed), "-t", "1", "-o", path],
                   check=True, capture_output=True)
    if keys:
        out = os.path.join(tmp, case + ".gguf")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "derive_model.py"), path, out] + keys, check=True)
        path = out
    return path


def case_ids(n_vocab, seed):
    rng = np.random.default_rng(seed)
    return [int(x) for x in rng.integers(3, n_vocab, N_IDS)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nib", default=os.path.join(ROOT, "build", "nib"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "golden", "synth"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for case, (shape, ftype, seed, keys) in CASES.items():
            path = build(args.nib, case, tmp)
            llm = llama_cpp.Llama(model_path=path, n_ctx=1024, n_batch=256, logits_all=True, n_threads=2, seed=0,
                                  verbose=False)
            ids = case_ids(llm.n_vocab(), seed)
            llm.eval(ids)
            rows = np.array(llm.scores[:len(ids)], dtype=np.float64)
            top = np.argsort(-rows, axis=1, kind="stable")[:, :TOP]
            mx = rows.max(1, keepdims=True)
            lse = (mx + np.log(np.exp(rows - mx).sum(1, keepdims=True)))[:, 0]
            doc = {"case": case, "shape": shape, "type": ftype, "seed": seed, "derive": keys,
                   "metric": "routed" if shape in ROUTED else "dense",
                   "sha256": sha256_file(path), "llama_cpp_version": llama_cpp.__version__,
                   "generated_by": "tools/gen_golden_synth.py", "date": datetime.date.today().isoformat(),
                   "n_vocab": llm.n_vocab(), "ids": ids, "top_ids": top.tolist(),
                   "top_logits": [[round(float(rows[i, j]), 4) for j in top[i]] for i in range(len(ids))],
                   "logsumexp": [round(float(x), 4) for x in lse]}
            out = os.path.join(args.out, case + ".json")
            with open(out, "w", encoding="utf-8") as f:
                json.dump(doc, f, separators=(",", ":"))
                f.write("\n")
            print(f"{case}: {len(ids)} positions, wrote {out} ({os.path.getsize(out) // 1024} KiB)")


if __name__ == "__main__":
    main()
