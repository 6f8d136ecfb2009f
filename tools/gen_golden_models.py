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
             followed by its greedy continuation), evaluated in one llama_eval
             call (n_batch 512): per position the top-20 (id, logit) and the
             logsumexp of the whole row, so a test can compute top-1 agreement
             and a KL divergence over the top-20 plus a tail bucket.
  self_noise llama.cpp against itself on the same `logits` sequences: batch
             evaluation (n_batch 512) against evaluation one token at a time
             (n_batch 1). Different kernels (matrix-matrix vs matrix-vector,
             different accumulation order) give different rounding; these
             numbers are the scale of "rounding noise" a correct independent
             implementation can be expected to show against llama.cpp.

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


def kl_rows(a, b, chunk=64):
    """Exact KL(softmax(a) || softmax(b)) per row (float64, in chunks of rows to bound memory)."""
    out = []
    for s in range(0, len(a), chunk):
        x = a[s:s + chunk].astype(np.float64)
        y = b[s:s + chunk].astype(np.float64)
        lx = x - (x.max(1, keepdims=True) + np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)))
        ly = y - (y.max(1, keepdims=True) + np.log(np.exp(y - y.max(1, keepdims=True)).sum(1, keepdims=True)))
        out.append((np.exp(lx) * (lx - ly)).sum(1))
    return np.concatenate(out)


def detok(llm, ids):
    return llm.detokenize(ids, special=True).decode("utf-8", errors="replace")


def gen_model(path, spec, out_dir):
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
    for pname in ("chat", "long"):
        ids = seqs[pname]
        n_prompt = len(ids) - GEN_TOKENS
        rows = eval_rows(llm, ids)
        # the greedy chain must be what the batch evaluation says, too (else the
        # golden file would contradict itself)
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
        kl = kl_rows(rows, rows1)
        top1 = float(np.mean(np.argmax(rows, 1) == np.argmax(rows1, 1)))
        d = np.abs(rows - rows1)
        del rows1, rows
        noise = {"name": pname, "positions": len(ids),
                 "max_abs_logit_diff": r4(d.max()), "mean_abs_logit_diff": float(f"{d.mean():.3g}"),
                 "mean_kl": float(f"{kl.mean():.3g}"), "max_kl": float(f"{kl.max():.3g}"),
                 "top1_agreement": top1,
                 "batch_argmax_matches_greedy_chain": f"{n_chain_agree}/{GEN_TOKENS}"}
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
    del llm


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models-dir", default=os.environ.get("NIB_MODELS_DIR", os.path.join(root, "models")))
    ap.add_argument("--out", default=os.path.join(root, "tests", "golden", "models"))
    ap.add_argument("--only", help="one model file name")
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
        gen_model(path, spec, args.out)
        done += 1
    if done == 0:
        sys.exit("gen_golden_models: no model found")


if __name__ == "__main__":
    main()
