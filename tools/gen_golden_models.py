#!/usr/bin/env python3
"""Writes the whole-model golden files: what llama.cpp computes for nib's test models.

Run with the llama.cpp venv (tools/setup_llama_venv.sh, or `make golden`):

    .venv-llama/bin/python tools/gen_golden_models.py [--models-dir models] [--out tests/golden/models]

For each model present it writes tests/golden/models/<model file stem>.json:

  tokenize   llama.cpp's ids for a set of texts, with the model's own BOS rule
             (llama_tokenize add_special=True) and special-token text parsed
             (parse_special=True): nib_tokenize(..., true, true, ...) must agree.
  greedy     greedy (argmax) continuations of GEN_TOKENS tokens from llama.cpp's
             prompt ids, token by token; for each generated token the top-5
             (id, logit) of the row that chose it, so a divergence can be
             judged (was it a near-tie?). Generation does not stop at
             end-of-generation tokens: every prompt has exactly GEN_TOKENS.
  logits     for two sequences (the chat prompt and the long prompt, each
             followed by its greedy continuation), evaluated by one Llama.eval
             call (batches of n_batch 512): per position the top-20 (id, logit) and the
             logsumexp of the whole row, so a test can compute top-1 agreement
             and a KL divergence over the top-20 plus a tail bucket.
  self_noise llama.cpp against itself on the same `logits` sequences: batch
             evaluation (n_batch 512) against evaluation one token at a time
             (n_batch 1). Different kernels (matrix-matrix vs matrix-vector,
             different accumulation order) give different rounding; these
             numbers are the scale of "rounding noise" a correct independent
             implementation can be expected to show against llama.cpp:
             exact KL, top-1 agreement, max |log-prob difference| over the
             top-20, how much the gap between the top-1 logit and the next 4
             changes (p99, p99.9, max) and the largest top-2 gap at which the
             two argmaxes differ. tests/e2e/test_models.py prints them.

  f64_reference  both llama.cpp paths against an exact reference: a float64
             numpy forward pass of the dequantized weights (ref_forward below):
             the same statistics, KL(reference || llama.cpp). Off with
             --no-reference.

Logits are rounded to 4 decimals. The llama_cpp version and the model file's
sha256 are recorded; the e2e test refuses to compare against another file.
"""
import argparse
import datetime
import hashlib
import json
import math
import os
import sys
import time

import numpy as np

import llama_cpp

GEN_TOKENS = 48
TOP_GEN = 5
TOP_LOGITS = 20
N_CTX = 2048
N_THREADS = 2

MODELS = {
    "SmolLM2-135M-Instruct.Q4_1.gguf": {
        "chat": "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n",
        "special_text": "<|im_start|>system\nYou are helpful.<|im_end|>\n",
    },
    # SmolLM2's weights with YaRN rope scaling (factor 4 over 2048 positions;
    # tools/derive_model.py, from tools/fetch_models.sh); no float64 reference
    # (ref_forward has no YaRN)
    "SmolLM2-135M-Instruct.Q4_1.yarn4.gguf": {
        "chat": "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n",
        "special_text": "<|im_start|>system\nYou are helpful.<|im_end|>\n",
        "reference": False,
    },
    "gemma-3-270m-q4_k_m.gguf": {
        "chat": "<start_of_turn>user\n{}<end_of_turn>\n<start_of_turn>model\n",
        "special_text": "<start_of_turn>user\nHi!<end_of_turn>\n",
    },
}

CHAT_QUESTION = "What are three good reasons to learn a second language? Answer briefly."

CODE_PROMPT = (
    "def fibonacci(n):\n"
    "    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"
    "    if n < 2:\n"
)

# > 600 tokens with either tokenizer (checked below): past Gemma 3's 512-token
# sliding window, so its local-attention layers must forget the beginning.
LONG_PROMPT = """The history of computing is often told as a story of machines, but it is just as much a story of ideas about how to describe work precisely enough that something other than a person could carry it out. Long before electronic computers existed, people built tables of logarithms, astronomical positions and interest rates by hand. The work was divided among many human computers, each of whom performed a small part of a larger calculation, following written instructions that told them which numbers to add, multiply or look up, and in which order. Errors crept in at every step: a digit copied wrongly, a line skipped, a sum carried incorrectly. Printed tables were checked against each other, and mistakes that survived into print could cause ships to run aground.

Charles Babbage, an English mathematician, was frustrated by these errors and designed a machine, the Difference Engine, to compute polynomial tables mechanically and print them directly, removing the human copyist from the process. He later conceived a far more ambitious machine, the Analytical Engine, which would have had a store for numbers, a mill for arithmetic, and a way of reading instructions from punched cards borrowed from the Jacquard loom. Ada Lovelace, who translated and annotated a description of the Analytical Engine, wrote what is often called the first published program: a method for computing Bernoulli numbers on the machine. More importantly, she observed that such a machine might manipulate symbols other than numbers, such as musical notes, if their relationships could be expressed in the right form.

Neither engine was completed in Babbage's lifetime. The ideas resurfaced in the twentieth century, when mathematicians such as Alan Turing and Alonzo Church asked what it means for a function to be computable at all. Turing imagined a simple abstract machine that reads and writes symbols on an unbounded tape, moving one cell at a time according to a finite table of rules. He showed that a single universal machine could imitate any other such machine, given a description of it on its tape. This insight, that a program is just data that another program can read, lies at the heart of every modern computer.

During the Second World War, the need to break codes and compute artillery tables drove the construction of the first large electronic calculators. Colossus, built in Britain, helped decipher German teleprinter messages. In the United States, ENIAC filled a large room with vacuum tubes and was programmed by setting switches and plugging cables, a process that could take days. Engineers soon realized that storing the program in the same memory as the data would make machines far more flexible, and the stored-program design described by John von Neumann and his colleagues became the template for the machines that followed.

The decades after the war brought transistors, integrated circuits and microprocessors, each making computers smaller, cheaper and faster by orders of magnitude. Programming languages such as Fortran, Lisp and C let people write instructions in forms closer to mathematics or to ordinary reasoning, while compilers translated them into the machine's own code. Operating systems allowed many programs, and many users, to share one machine. Networks connected machines to each other, and eventually the internet connected almost all of them.

Today a phone in a pocket performs more arithmetic in a second than all the human computers of the nineteenth century managed in their lifetimes. Yet the central problem Babbage and Lovelace faced remains the same: how to describe a task so precisely that a machine can carry it out, and how to be sure that the description is correct. In the end, the most important lesson of this long history may be that"""

TOKENIZE_TEXTS = [
    "",
    "Hello world",
    " Hello  world!\n\nHow are you?",
    "The year 2024 had 366 days; pi is 3.14159265.",
    "naïve café déjà vu, Ünïcödé: 日本語のテキスト, 한국어, emoji 🙂👍🏽",
    "    indented\n\tTabbed\r\nline   with   spaces   ",
    "<unk> and <s> look special but are plain text here",
    "I'm sure you'll see they've done it, we'd've known.",
]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def logsumexp(row):
    m = float(np.max(row))
    return m + math.log(float(np.sum(np.exp(row.astype(np.float64) - m))))


def r4(x):
    return round(float(x), 4)


def top_k(row, k):
    idx = np.argpartition(-row, k)[:k]
    idx = idx[np.argsort(-row[idx], kind="stable")]
    return [int(i) for i in idx], [r4(row[i]) for i in idx]


def eval_rows(llm, ids, one_by_one=False):
    """Logits of every position of ids, from a fresh context."""
    llm.reset()
    if one_by_one:
        for t in ids:
            llm.eval([t])
    else:
        llm.eval(ids)
    assert llm.n_tokens == len(ids)
    return np.array(llm.scores[: len(ids)], dtype=np.float32)


def greedy(llm, prompt_ids, n):
    llm.reset()
    llm.eval(prompt_ids)
    out, tops = [], []
    for _ in range(n):
        row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        ids, logits = top_k(row, TOP_GEN)
        tok = int(np.argmax(row))
        assert tok == ids[0]
        out.append(tok)
        tops.append([[i, l] for i, l in zip(ids, logits)])
        llm.eval([tok])
    return out, tops


def compare_rows(a, b, chunk=64):
    """How far logits rows b are from rows a (float64, in chunks of rows to bound memory):
    exact KL(softmax(a) || softmax(b)) per row, top-1 agreement, the largest
    |log-probability difference| over a's top-20, the change of a's gap between
    its top-1 and each of its next 4 tokens (what decides whether an argmax can
    flip), and the largest top-2 gap of a at which the argmaxes differ."""
    kl, agree, dlp, gap_change, gap_at_flip = [], [], [], [], [0.0]
    for s in range(0, len(a), chunk):
        x = a[s:s + chunk].astype(np.float64)
        y = b[s:s + chunk].astype(np.float64)
        lx = x - (x.max(1, keepdims=True) + np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)))
        ly = y - (y.max(1, keepdims=True) + np.log(np.exp(y - y.max(1, keepdims=True)).sum(1, keepdims=True)))
        kl.append((np.exp(lx) * (lx - ly)).sum(1))
        ax, ay = np.argmax(x, 1), np.argmax(y, 1)
        agree.append(ax == ay)
        idx = np.argsort(-x, 1)[:, :TOP_LOGITS]
        tx, ty = np.take_along_axis(lx, idx, 1), np.take_along_axis(ly, idx, 1)
        dlp.append(np.abs(tx - ty).max(1))
        gap_change.append(np.abs((tx[:, :1] - tx[:, 1:5]) - (ty[:, :1] - ty[:, 1:5])).ravel())
        for r in np.nonzero(ax != ay)[0]:
            gap_at_flip.append(float(x[r, ax[r]] - x[r, ay[r]]))
    kl, agree, dlp, gc = map(np.concatenate, (kl, agree, dlp, gap_change))
    return {"mean_kl": float(f"{kl.mean():.3g}"), "max_kl": float(f"{kl.max():.3g}"),
            "top1_agreement": round(float(agree.mean()), 4),
            "max_abs_logprob_diff_top20": r4(dlp.max()),
            "gap_change_p99": r4(np.percentile(gc, 99)), "gap_change_p999": r4(np.percentile(gc, 99.9)),
            "gap_change_max": r4(gc.max()), "max_gap_at_top1_disagreement": r4(max(gap_at_flip))}


# ---- an exact reference: float64 numpy forward pass of the dequantized weights ----
# Both engines quantize activations (to 8 bits, for the integer dot products of
# the quantized formats) and keep the KV cache in fp16; this is the math they
# both approximate, so it says how far each is from the truth, not only from
# each other. Written from the architectures' definitions (as llama.cpp builds
# them: llama, and gemma3 with its sliding window on 5 layers out of 6 and
# rope base 10000 there); reads and dequantizes with gguf-py.

def ref_load(path):
    from gguf import GGUFReader
    from gguf.quants import dequantize
    r = GGUFReader(path)
    kv = {k: f.contents() for k, f in r.fields.items() if not k.startswith("tokenizer.")}
    w = {t.name: dequantize(t.data, t.tensor_type).astype(np.float64) for t in r.tensors}
    return kv, w


def _rmsnorm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _rope(x, pos, base, neox):  # x (n, heads, d)
    d = x.shape[-1]
    ang = pos[:, None] * base ** (-np.arange(0, d, 2, dtype=np.float64) / d)[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    if neox:
        a, b = x[..., :d // 2], x[..., d // 2:]
        return np.concatenate([a * c - b * s, a * s + b * c], -1)
    out = np.empty_like(x)
    a, b = x[..., 0::2], x[..., 1::2]
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def ref_forward(kv, w, ids):
    arch = kv["general.architecture"]
    assert arch in ("llama", "gemma3"), arch
    hp = lambda k, d=None: kv.get(f"{arch}.{k}", d)  # noqa: E731
    n_embd, nh, nkv = hp("embedding_length"), hp("attention.head_count"), hp("attention.head_count_kv")
    eps, hd = hp("attention.layer_norm_rms_epsilon"), hp("attention.key_length", n_embd // nh)
    gemma = arch == "gemma3"
    n = len(ids)
    pos = np.arange(n, dtype=np.float64)
    x = w["token_embd.weight"][ids] * (np.sqrt(n_embd) if gemma else 1.0)
    qi, ki = np.arange(n)[:, None], np.arange(n)[None, :]
    for il in range(hp("block_count")):
        p = f"blk.{il}."
        h = _rmsnorm(x, w[p + "attn_norm.weight"], eps)
        q = (h @ w[p + "attn_q.weight"].T).reshape(n, nh, hd)
        k = (h @ w[p + "attn_k.weight"].T).reshape(n, nkv, hd)
        v = (h @ w[p + "attn_v.weight"].T).reshape(n, nkv, hd)
        window, base = 0, hp("rope.freq_base", 10000.0)
        if gemma:
            q = _rmsnorm(q, w[p + "attn_q_norm.weight"], eps)
            k = _rmsnorm(k, w[p + "attn_k_norm.weight"], eps)
            if il % 6 < 5:
                window, base = hp("attention.sliding_window"), 10000.0
        q, k = _rope(q, pos, base, gemma), _rope(k, pos, base, gemma)
        k, v = np.repeat(k, nh // nkv, 1), np.repeat(v, nh // nkv, 1)
        sc = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd)
        mask = (ki > qi) | ((qi - ki >= window) if window else False)
        sc[:, mask] = -np.inf
        pr = np.exp(sc - sc.max(-1, keepdims=True))
        pr /= pr.sum(-1, keepdims=True)
        o = np.einsum("hqk,khd->qhd", pr, v).reshape(n, nh * hd) @ w[p + "attn_output.weight"].T
        if gemma:
            o = _rmsnorm(o, w[p + "post_attention_norm.weight"], eps)
        x = x + o
        h = _rmsnorm(x, w[p + "ffn_norm.weight"], eps)
        g, u = h @ w[p + "ffn_gate.weight"].T, h @ w[p + "ffn_up.weight"].T
        if gemma:
            act = 0.5 * g * (1 + np.tanh(np.sqrt(2 / np.pi) * (g + 0.044715 * g ** 3)))
        else:
            act = g / (1 + np.exp(-g))
        f = (act * u) @ w[p + "ffn_down.weight"].T
        if gemma:
            f = _rmsnorm(f, w[p + "post_ffw_norm.weight"], eps)
        x = x + f
    x = _rmsnorm(x, w["output_norm.weight"], eps)
    return x @ w.get("output.weight", w["token_embd.weight"]).T


def detok(llm, ids):
    return llm.detokenize(ids, special=True).decode("utf-8", errors="replace")


def gen_model(path, spec, out_dir, reference):
    name = os.path.basename(path)
    print(f"== {name}", flush=True)
    llm = llama_cpp.Llama(model_path=path, n_ctx=N_CTX, logits_all=True, n_threads=N_THREADS, seed=0,
                          verbose=False)
    tok = lambda text: llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)  # noqa: E731
    n_vocab = llm.n_vocab()

    prompts = [
        ("france", "The capital of France is"),
        ("chat", spec["chat"].format(CHAT_QUESTION)),
        ("code", CODE_PROMPT),
        ("story", "Once upon a time, in a small village by the sea, there lived"),
        ("list", "Here is a list of the planets of the solar system, in order from the Sun:\n1."),
        ("long", LONG_PROMPT),
    ]

    tokenize = [{"text": t, "ids": tok(t)} for t in TOKENIZE_TEXTS + [spec["special_text"]]]
    tokenize += [{"text": t, "ids": tok(t)} for _, t in prompts]

    greedy_out = []
    seqs = {}
    for pname, text in prompts:
        ids = tok(text)
        if pname == "long":
            assert len(ids) > 600, f"long prompt is only {len(ids)} tokens"
        t0 = time.time()
        gen, tops = greedy(llm, ids, GEN_TOKENS)
        print(f"  greedy {pname:7s} {len(ids):4d} prompt tokens, {time.time() - t0:.1f} s: "
              f"{detok(llm, gen)!r}", flush=True)
        greedy_out.append({"name": pname, "text": text, "prompt_ids": ids, "tokens": gen,
                           "text_out": detok(llm, gen), "top": tops})
        seqs[pname] = ids + gen

    logits_out = []
    self_noise = []
    f64 = []
    ref_w = ref_load(path) if reference else None
    for pname in ("chat", "long"):
        ids = seqs[pname]
        n_prompt = len(ids) - GEN_TOKENS
        rows = eval_rows(llm, ids)
        # how often the batch evaluation's argmax is the token-by-token greedy
        # chain's token (a near-tie can flip between llama.cpp's two paths)
        chain_argmax = np.argmax(rows[n_prompt - 1:-1], axis=1)
        n_chain_agree = int(np.sum(chain_argmax == np.array(ids[n_prompt:])))
        top_ids, top_logits, lse = [], [], []
        for row in rows:
            i, l = top_k(row, TOP_LOGITS)
            top_ids.append(i)
            top_logits.append(l)
            lse.append(r4(logsumexp(row)))
        logits_out.append({"name": pname, "ids": ids, "n_prompt": n_prompt, "top_ids": top_ids,
                           "top_logits": top_logits, "logsumexp": lse})
        rows1 = eval_rows(llm, ids, one_by_one=True)
        d_max = float(np.abs(rows - rows1).max())
        noise = {"name": pname, "positions": len(ids), "max_abs_logit_diff": r4(d_max)}
        noise.update(compare_rows(rows, rows1))
        noise["batch_argmax_matches_greedy_chain"] = f"{n_chain_agree}/{GEN_TOKENS}"
        if ref_w:
            t0 = time.time()
            ref = ref_forward(*ref_w, np.array(ids))
            f64.append({"name": pname, "llama_cpp_batch": compare_rows(ref, rows),
                        "llama_cpp_one_by_one": compare_rows(ref, rows1)})
            print(f"  float64 reference {pname} ({time.time() - t0:.0f} s) vs llama.cpp: {f64[-1]}", flush=True)
            del ref
        del rows1, rows
        self_noise.append(noise)
        print(f"  logits {pname}: {len(ids)} positions; llama.cpp batch-512 vs batch-1: {noise}", flush=True)

    doc = {
        "model": name,
        "sha256": sha256_file(path),
        "llama_cpp_version": llama_cpp.__version__,
        "generated_by": "tools/gen_golden_models.py",
        "date": datetime.date.today().isoformat(),
        "settings": {"n_ctx": N_CTX, "n_batch": 512, "n_threads": N_THREADS, "seed": 0, "kv_cache": "f16",
                     "tokenize": "add_special=True (the model's BOS rule), parse_special=True",
                     "gen_tokens": GEN_TOKENS, "greedy_top": TOP_GEN, "logits_top": TOP_LOGITS,
                     "logits_rounding": 4},
        "n_vocab": n_vocab,
        "bos": llm.token_bos(),
        "eos": llm.token_eos(),
        "tokenize": tokenize,
        "greedy": greedy_out,
        "logits": logits_out,
        "self_noise": self_noise,
        "f64_reference": f64,
    }
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, os.path.splitext(name)[0] + ".json")
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    os.replace(out + ".tmp", out)
    size = os.path.getsize(out)
    print(f"  wrote {out} ({size / 1024:.0f} KiB)", flush=True)
    assert size < 1 << 20, f"{out} is {size} bytes, over 1 MB"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models-dir", default=os.environ.get("NIB_MODELS_DIR", os.path.join(root, "models")))
    ap.add_argument("--out", default=os.path.join(root, "tests", "golden", "models"))
    ap.add_argument("--only", help="one model file name")
    ap.add_argument("--no-reference", action="store_true",
                    help="skip the float64 reference (needs gguf-py; a few minutes and a few GB per model)")
    args = ap.parse_args()
    print(f"llama_cpp {llama_cpp.__version__}", flush=True)
    done = 0
    for name, spec in MODELS.items():
        if args.only and args.only != name:
            continue
        path = os.path.join(args.models_dir, name)
        if not os.path.exists(path):
            print(f"skip {name}: not in {args.models_dir} (run sh tools/fetch_models.sh)", file=sys.stderr)
            continue
        gen_model(path, spec, args.out, not args.no_reference and spec.get("reference", True))
        done += 1
    if done == 0:
        sys.exit("gen_golden_models: no model found")


if __name__ == "__main__":
    main()
