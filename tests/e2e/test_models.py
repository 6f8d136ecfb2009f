#!/usr/bin/env python3
"""Whole-model agreement with llama.cpp, against the committed golden files.

The golden files (tests/golden/models/*.json) hold what llama.cpp computed for
nib's two test models (tools/gen_golden_models.py; `make golden` regenerates
them). This runner loads libnib.so with ctypes (nib_ctypes.py), and for each
model present in the models directory (env NIB_MODELS_DIR, else models/;
`sh tools/fetch_models.sh` puts them there) checks:

  (a) tokenize   nib_tokenize(add_special, parse_special) gives llama.cpp's ids
                 for every golden text.
  (b) greedy     from llama.cpp's prompt ids, nib's argmax chain (decoding one
                 token at a time) equals llama.cpp's for all 48 tokens; where it
                 diverges, the divergence must be at a near-tie: llama.cpp's
                 own gap between the token it chose and nib's choice is below
                 NEAR_TIE. The same rule holds with nib teacher-forced on
                 llama.cpp's chain (every one of the 48 positions is judged,
                 also those after a free-running divergence).
  (c) logits     on two sequences (the chat prompt and the > 600-token prompt,
                 each with its continuation): every position where nib's argmax
                 differs from llama.cpp's is a near-tie (as in (b)) and they
                 agree at >= TOP1_MIN of positions; the mean KL(llama.cpp ||
                 nib), computed over llama.cpp's top-20 tokens plus one bucket
                 for the rest of the vocabulary, is below KL_MEAN_MAX, over all
                 positions and over positions >= 512 alone (past Gemma 3's
                 sliding window, where a window bug would show); no position
                 above KL_POS_MAX. Coarse-graining can only lower a KL
                 divergence, so this is a lower bound of the true KL. Max
                 |logit difference| and max |log-probability difference| (the
                 first includes shifts of a whole row, to which softmax is
                 blind) over the top-20 are reported.
  (d) determinism two greedy runs of nib (a fresh context, and the same
                 context after nib_ctx_truncate(0)) give identical tokens.

Thresholds, from measurement (llama_cpp 0.3.36, x86-64 AVX2, 2 threads; the
golden files record llama.cpp's side as `self_noise` and `f64_reference`, and
this runner prints them next to nib's):

  mean KL, exact (full vocabulary)      SmolLM2 chat / long    Gemma chat / long
  llama.cpp batch vs one-token-at-a-time  2.4e-3 / 3.1e-3        3.9e-3 / 6.3e-3
  llama.cpp vs float64 reference          2.5e-3 / 2.8e-3        5.6e-3 / 5.4e-3
  nib vs float64 reference                2.8e-3 / 2.8e-3        5.4e-3 / 5.0e-3
  nib vs llama.cpp                        3.8e-3 / 3.4e-3        6.3e-3 / 6.9e-3
  nib vs llama.cpp, top-20 + tail (here)  3.1e-3 / 2.5e-3        3.3e-3 / 4.6e-3
  top-1 agreement, llama.cpp vs itself    98.6% / 96.7%          97.2% / 93.4%
  top-1 agreement, nib vs llama.cpp       97.2% / 96.0%          95.8% / 94.7%

  (The float64 reference is a numpy forward pass of the dequantized weights,
  tools/gen_golden_models.py ref_forward. Both engines quantize activations to
  8 bits for the integer dot products and keep K/V in fp16; that, not a
  modelling difference, is the noise floor: nib is as close to the exact math
  as llama.cpp is, and the two differ from each other by about the sum of
  their distances to it. nib's own batch and one-token paths are bitwise
  identical, so nib's numbers do not depend on how a sequence is batched.)

  The same reference with a bug put in, KL against the correct one on the long
  prompt: rope pairs NEOX instead of NORM (SmolLM2) 3.0; rope base 1e4 instead
  of 1e5 (SmolLM2) 0.15; no sliding window (Gemma) 0.61, 1.85 past position
  512; RMSNorm eps 1e-5 instead of 1e-6 (Gemma) 0.026. (Too small for any
  test at this noise floor: window 511 instead of 512, 4.6e-5; SmolLM2 eps
  1e-6 instead of 1e-5, 1.5e-7.)

  KL_MEAN_MAX = 1e-2: above every correct pair measured (<= 6.9e-3 exact,
    <= 4.6e-3 as computed here) and below the subtlest bug above (2.6e-2).
  KL_POS_MAX = 0.25: correct pairs reach 0.115 at a single position (llama.cpp
    vs the reference), the bugs above reach 4.5 and more.
  NEAR_TIE = 1.0 logit: the gap between the top-1 logit and each of the next
    four changes between two correct implementations by up to 0.5-1.0 at the
    99.9th percentile and 1.2 at most (Gemma's logits are the larger), and a
    choice can only flip where the gap is smaller than that change. Measured
    flips happened at gaps up to 0.48 (nib vs llama.cpp), 0.49 (llama.cpp's
    two paths) and 0.66 (llama.cpp vs the reference).
  TOP1_MIN = 0.90: the 99% first asked for is out of reach: llama.cpp agrees
    with itself at 93.4-98.6% of positions, since its near-ties (top-2 gap
    below the change above) are that frequent in small models. Every
    disagreement must be a near-tie, which is the real check.

It ends with "N passed, N failed, N skipped" and exits non-zero on a failure.
Usage: tests/e2e/test_models.py [--lib build/libnib.so] [--threads 2] [--golden DIR] [--models DIR]
"""
import argparse
import glob
import hashlib
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nib_ctypes import Nib, NibError  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

NEAR_TIE = 1.0         # logits: llama.cpp's own gap below which a different choice is a tie
TOP1_MIN = 0.90        # fraction of positions whose argmax must agree
KL_MEAN_MAX = 1e-2     # nats, mean over positions, top-20 + tail
KL_POS_MAX = 0.25      # nats, any single position

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
    sys.stdout.flush()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def short(s, n=40):
    s = s.replace("\n", "\\n")
    return s if len(s) <= n else s[:n] + "..."


def lse(row):
    row = row.astype(np.float64)
    m = row.max()
    return m + math.log(np.exp(row - m).sum())


# ---- (a) tokenization ---------------------------------------------------------

def check_tokenize(tag, m, g):
    for item in g["tokenize"]:
        want = item["ids"]
        try:
            got = m.tokenize(item["text"])
        except NibError as e:
            report(False, f"{tag} tokenize {short(item['text'])!r}", str(e))
            continue
        if got == want:
            report(True, f"{tag} tokenize {short(item['text'])!r}", f"{len(got)} ids")
        else:
            k = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
            report(False, f"{tag} tokenize {short(item['text'])!r}",
                   f"first difference at {k}: nib {got[max(0, k - 2):k + 4]} ({len(got)} ids), "
                   f"llama.cpp {want[max(0, k - 2):k + 4]} ({len(want)} ids)")


# ---- (b) greedy ---------------------------------------------------------------

def gap_for(top, chosen_other):
    """llama.cpp's logit gap between its own choice and another token, from its top-5 (None if absent)."""
    best = top[0][1]
    for i, l in top:
        if i == chosen_other:
            return best - l
    return None


def check_greedy(tag, m, g, threads):
    for item in g["greedy"]:
        name = f"{tag} greedy {item['name']}"
        want = item["tokens"]
        tops = item["top"]
        prompt = item["prompt_ids"]
        try:
            with m.context(n_ctx=2048, n_threads=threads) as ctx:
                t0 = time.time()
                ctx.decode(prompt)
                first = ctx.logits()
                t1 = time.time()
                got = []
                for _ in range(len(want)):
                    got.append(int(np.argmax(ctx.logits())))
                    ctx.decode([got[-1]])
                t2 = time.time()
                # teacher-forced on llama.cpp's chain: row 0 from the prompt, rows 1.. from want[:-1]
                ctx.truncate(len(prompt))
                rest = ctx.decode(want[:-1], all_logits=True)
                tf_rows = np.vstack([first[None, :], rest])
        except NibError as e:
            report(False, name, str(e))
            continue
        problems = []
        # free-running
        div = next((i for i in range(len(want)) if got[i] != want[i]), None)
        if div is None:
            free = f"{len(want)}/{len(want)} tokens identical"
        else:
            gap = gap_for(tops[div], got[div])
            gs = "outside llama.cpp's top-5" if gap is None else f"llama.cpp gap {gap:.4f}"
            free = (f"first divergence at token {div}: llama.cpp {want[div]} ({m.detokenize([want[div]])!r}), "
                    f"nib {got[div]} ({m.detokenize([got[div]])!r}), {gs}")
            if gap is None or gap >= NEAR_TIE:
                problems.append(f"not a near-tie (< {NEAR_TIE})")
        # teacher-forced
        tf_bad = []
        tf_mismatch = 0
        tf_maxdiff = 0.0
        for i in range(len(want)):
            row = tf_rows[i]
            for tid, tl in tops[i]:
                tf_maxdiff = max(tf_maxdiff, abs(float(row[tid]) - tl))
            a = int(np.argmax(row))
            if a != want[i]:
                tf_mismatch += 1
                gap = gap_for(tops[i], a)
                if gap is None or gap >= NEAR_TIE:
                    tf_bad.append((i, a, gap))
        if tf_bad:
            i, a, gap = tf_bad[0]
            problems.append(f"teacher-forced: {len(tf_bad)} positions disagree off a near-tie, first at {i} "
                            f"(nib {a}, llama.cpp {want[i]}, gap {'n/a' if gap is None else f'{gap:.4f}'})")
        detail = (f"{free}; teacher-forced {len(want) - tf_mismatch}/{len(want)} argmax agree, "
                  f"max |logit diff| {tf_maxdiff:.4f} on top-5; prompt {len(prompt) / (t1 - t0):.0f} tok/s, "
                  f"generation {len(want) / (t2 - t1):.1f} tok/s")
        if div is not None or problems:
            detail += f"; nib: {m.detokenize(got)!r}"
        report(not problems, name, detail + ("; " + "; ".join(problems) if problems else ""))


# ---- (c) logits ---------------------------------------------------------------

def check_logits(tag, m, g, threads, chunk=128):
    for item in g["logits"]:
        name = f"{tag} logits {item['name']}"
        ids = item["ids"]
        top_ids = np.array(item["top_ids"], dtype=np.int64)
        top_l = np.array(item["top_logits"], dtype=np.float64)
        l_lse = np.array(item["logsumexp"], dtype=np.float64)
        n = len(ids)
        nib_top = np.empty_like(top_l)
        nib_lse = np.empty(n)
        nib_arg = np.empty(n, dtype=np.int64)
        nib_argl = np.empty(n)
        try:
            with m.context(n_ctx=2048, n_threads=threads) as ctx:
                for s in range(0, n, chunk):
                    rows = ctx.decode(ids[s:s + chunk], all_logits=True)
                    for j, row in enumerate(rows):
                        p = s + j
                        nib_top[p] = row[top_ids[p]]
                        nib_lse[p] = lse(row)
                        nib_arg[p] = int(np.argmax(row))
                        nib_argl[p] = row[nib_arg[p]]
        except NibError as e:
            report(False, name, str(e))
            continue
        # KL(P || Q) over llama.cpp's top-20 + a tail bucket
        lp = top_l - l_lse[:, None]
        lq = nib_top - nib_lse[:, None]
        p = np.exp(lp)
        q = np.exp(lq)
        p_tail = np.clip(1.0 - p.sum(1), 0.0, 1.0)
        q_tail = np.clip(1.0 - q.sum(1), 1e-12, 1.0)
        kl = (p * (lp - lq)).sum(1) + np.where(p_tail > 1e-12, p_tail * (np.log(np.maximum(p_tail, 1e-300)) -
                                                                          np.log(q_tail)), 0.0)
        kl = np.maximum(kl, 0.0)
        diff = np.abs(nib_top - top_l)
        dlp = np.abs(lq - lp)
        agree = nib_arg == top_ids[:, 0]
        # positions that disagree: llama.cpp's gap between its top-1 and nib's choice
        bad_ties = []
        for pos in np.nonzero(~agree)[0]:
            hit = np.nonzero(top_ids[pos] == nib_arg[pos])[0]
            gap = top_l[pos, 0] - top_l[pos, hit[0]] if len(hit) else None
            if gap is None or gap >= NEAR_TIE:
                bad_ties.append((int(pos), gap))
        top1 = float(agree.mean())
        worst = int(np.argmax(kl))
        # where it goes wrong first, if anywhere (for debugging)
        first_bad = next((i for i in range(n) if dlp[i].max() > 1.5 or kl[i] > KL_POS_MAX), None)
        sw = ""
        if n > 512:
            sw = (f"; positions >= 512: mean KL {kl[512:].mean():.2e}, max |log-prob diff| {dlp[512:].max():.4f} "
                  f"(< 512: {kl[:512].mean():.2e}, {dlp[:512].max():.4f})")
        detail = (f"{n} positions: top-1 agreement {top1 * 100:.2f}%, mean KL {kl.mean():.2e} "
                  f"(max {kl.max():.2e} at {worst}), max |log-prob diff| {dlp.max():.4f}, "
                  f"max |logit diff| {diff.max():.4f} (mean {diff.mean():.4f}){sw}")
        problems = []
        if top1 < TOP1_MIN:
            problems.append(f"top-1 agreement below {TOP1_MIN * 100:.0f}%")
        if bad_ties:
            pos, gap = bad_ties[0]
            problems.append(f"{len(bad_ties)} argmax disagreements off a near-tie, first at position {pos} "
                            f"(llama.cpp {top_ids[pos, 0]}, nib {nib_arg[pos]}, "
                            f"gap {'outside top-20' if gap is None else f'{gap:.4f}'})")
        if kl.mean() > KL_MEAN_MAX:
            problems.append(f"mean KL above {KL_MEAN_MAX:g}")
        if n > 512 and kl[512:].mean() > KL_MEAN_MAX:
            problems.append(f"mean KL past position 512 above {KL_MEAN_MAX:g}")
        if kl.max() > KL_POS_MAX:
            problems.append(f"a position's KL above {KL_POS_MAX:g}")
        if problems and first_bad is not None:
            fb = first_bad
            problems.append(f"first position with a log-prob off by > 1.5 or KL > {KL_POS_MAX}: {fb} "
                            f"(token {ids[fb]}); there llama.cpp "
                            f"top-3 {list(zip(top_ids[fb, :3].tolist(), top_l[fb, :3].tolist()))}, nib at those "
                            f"{np.round(nib_top[fb, :3], 4).tolist()}, lse llama.cpp {l_lse[fb]:.4f} nib "
                            f"{nib_lse[fb]:.4f}")
        report(not problems, name, detail + ("; " + "; ".join(problems) if problems else ""))


# ---- (d) determinism ------------------------------------------------------------

def check_determinism(tag, m, g, threads):
    item = g["greedy"][0]
    n = len(item["tokens"])
    try:
        with m.context(n_ctx=2048, n_threads=threads) as ctx:
            a = ctx.greedy(item["prompt_ids"], n)
            la = ctx.logits()
            ctx.truncate(0)
            b = ctx.greedy(item["prompt_ids"], n)
            lb = ctx.logits()
        with m.context(n_ctx=2048, n_threads=threads) as ctx:
            c = ctx.greedy(item["prompt_ids"], n)
            lc = ctx.logits()
    except NibError as e:
        report(False, f"{tag} determinism", str(e))
        return
    same_bits = np.array_equal(la.view(np.uint32), lb.view(np.uint32)) and \
        np.array_equal(la.view(np.uint32), lc.view(np.uint32))
    report(a == b == c, f"{tag} determinism",
           f"3 greedy runs of {n} tokens ({item['name']}): tokens {'identical' if a == b == c else 'DIFFER'}; "
           f"final logits bitwise {'identical' if same_bits else 'different'}")


# ---- main ---------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "libnib.so"))
    ap.add_argument("--golden", default=os.path.join(ROOT, "tests", "golden", "models"))
    ap.add_argument("--models", default=os.environ.get("NIB_MODELS_DIR", os.path.join(ROOT, "models")))
    ap.add_argument("--threads", type=int, default=int(os.environ.get("NIB_THREADS", "2")))
    ap.add_argument("--only", choices=["tokenize", "greedy", "logits", "determinism"], action="append",
                    help="run only these checks (repeatable)")
    args = ap.parse_args()
    only = set(args.only or ["tokenize", "greedy", "logits", "determinism"])

    goldens = sorted(glob.glob(os.path.join(args.golden, "*.json")))
    if not goldens:
        report(False, "golden files", f"none in {args.golden} (make golden)")
    nib = None
    try:
        nib = Nib(args.lib)
    except OSError as e:
        report(False, "load libnib.so", str(e))
    for path in goldens:
        with open(path, encoding="utf-8") as f:
            g = json.load(f)
        tag = g["model"].replace("-135M-Instruct.Q4_1", "").replace("-q4_k_m", "").replace(".gguf", "")
        checks = [c for c in ("tokenize", "greedy", "logits", "determinism") if c in only]
        model_path = os.path.join(args.models, g["model"])
        why = None
        if nib is None:
            why = "libnib.so did not load"
        elif not os.path.exists(model_path):
            why = f"{model_path} absent (sh tools/fetch_models.sh)"
        elif sha256_file(model_path) != g["sha256"]:
            why = f"{model_path} is not the file the golden data came from (sha256 differs; make golden)"
        if why:
            for c in checks:
                skip(f"{tag} {c}", why)
            continue
        print(f"== {g['model']} (golden from llama_cpp {g['llama_cpp_version']})")
        for sn in g.get("self_noise", []):
            print(f"      llama.cpp batch-512 vs one token at a time, {sn['name']}: exact mean KL {sn['mean_kl']:.2e}, "
                  f"top-1 {sn['top1_agreement'] * 100:.1f}%, max |log-prob diff| "
                  f"{sn.get('max_abs_logprob_diff_top20', float('nan')):.3f}, gap change p99.9 "
                  f"{sn.get('gap_change_p999', float('nan')):.3f} max {sn.get('gap_change_max', float('nan')):.3f}, "
                  f"largest gap at a flip {sn.get('max_gap_at_top1_disagreement', float('nan')):.3f}")
        for fr in g.get("f64_reference", []):
            for k, v in fr.items():
                if k != "name":
                    print(f"      float64 reference vs {k}, {fr['name']}: exact mean KL {v['mean_kl']:.2e}, "
                          f"top-1 {v['top1_agreement'] * 100:.1f}%, gap change max {v['gap_change_max']:.3f}")
        sys.stdout.flush()
        try:
            m = nib.load(model_path)
        except NibError as e:
            for c in checks:
                report(False, f"{tag} {c}", str(e))
            continue
        if m.n_vocab != g["n_vocab"]:
            report(False, f"{tag} n_vocab", f"nib {m.n_vocab}, llama.cpp {g['n_vocab']}")
        try:
            if "tokenize" in only:
                check_tokenize(tag, m, g)
            if "greedy" in only:
                check_greedy(tag, m, g, args.threads)
            if "logits" in only:
                check_logits(tag, m, g, args.threads)
            if "determinism" in only:
                check_determinism(tag, m, g, args.threads)
        finally:
            m.close()
    print(f"{PASSED} passed, {FAILED} failed, {SKIPPED} skipped")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
