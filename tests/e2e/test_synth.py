#!/usr/bin/env python3
"""nib against llama.cpp on architectures no small model on PyPI has
(tests/golden/synth/*.json, from tools/gen_golden_synth.py): the case's model
is written again here (`nib synth` with the golden's shape, type and seed,
then tools/derive_model.py's key changes) and must be the file llama.cpp ran
(same sha256); nib's logits of the golden's 300 token ids are then compared
with llama.cpp's at every position:

  mean KL(llama.cpp || nib) over llama.cpp's top-20 plus one bucket for the
  rest of the vocabulary below KL_MEAN_MAX, and below KL_POS_MAX at every
  position; the largest |logit difference| over llama.cpp's top-20 below
  LOGIT_DIFF_MAX; the top-1 tokens agree wherever llama.cpp's own top-2 gap
  is at least NEAR_TIE.

Thresholds, from measurement (llama_cpp 0.3.36, tiny-gemma2, this metric):
  correct:                         mean KL 9.8e-6 / 5.8e-5 (caps 5/3 Q8_0 /
                                   Q4_K_M), at most 6.2e-4; |logit diff| 0.05 / 0.10
  attention soft-cap left out:     mean 2.3e-4, |logit diff| 0.32 (caps case)
  final soft-cap left out:         mean 5.6e-2 / 1.3e-4, |logit diff| 3.5 / 0.14
  window on the odd layers:        mean 7.1e-2 / 0.15, 73 / 94 real flips
So KL_MEAN_MAX = 2e-4, KL_POS_MAX = 5e-3, LOGIT_DIFF_MAX = 0.2 and NEAR_TIE =
0.2 (twice the largest correct logit difference: a gap below it can flip).

Mixtures of experts (golden "metric": "routed"): where a token's router has
two experts nearly tied, either engine may take the other, and that position's
logits differ a lot (llama.cpp against itself, batch against one token at a
time: 1 such position of 300 on tiny-mixtral). Those cases are judged by the
median position's KL and the share of positions above ROUTED_KL_POS (this
file's metric; tiny-mixtral Q4_0 / tiny-qwen3moe Q8_0):
  correct:                         median KL 3.5e-5 / 3.2e-5, 0.3% / 0.3% above 0.01
  top-k weights not renormalised:  median 5.7e-3 / 1.1e-2, 27% / 53% above
  the last chosen expert left out: median 4.8e-2 / 1.6e-2, 93% / 69% above
  gate and up swapped:             median 0.12 / 0.12, all above
So ROUTED_KL_MEDIAN_MAX = 1e-3 (30x the correct figure, a fifth of the
subtlest bug) and at most ROUTED_SHARE_MAX = 5% of positions above
ROUTED_KL_POS = 0.01.

Usage: tests/e2e/test_synth.py [--lib build/libnib.so] [--nib build/nib]
Ends with "N passed, N failed, N skipped"."""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nib_ctypes import Nib  # noqa: E402
from test_models import sha256_file  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KL_MEAN_MAX = 2e-4
KL_POS_MAX = 5e-3
LOGIT_DIFF_MAX = 0.2
NEAR_TIE = 0.2
ROUTED_KL_MEDIAN_MAX = 1e-3
ROUTED_KL_POS = 0.01
ROUTED_SHARE_MAX = 0.05
PASSED = FAILED = 0


def report(ok, name, detail=""):
    global PASSED, FAILED
    PASSED += ok
    FAILED += not ok
    print(f"{'ok   ' if ok else 'FAIL '} {name}" + (f"  ({detail})" if detail else ""), flush=True)


def check(nib_lib, nib_bin, g, tmp):
    case = g["case"]
    path = os.path.join(tmp, case + ".synth.gguf")
    p = subprocess.run([nib_bin, "synth", "--shape", g["shape"], "--type", g["type"], "--seed", str(g["seed"]),
                        "-t", "1", "-o", path], capture_output=True, text=True)
    if p.returncode != 0:
        report(False, f"{case}: nib synth", p.stderr.strip())
        return
    if g["derive"]:
        out = os.path.join(tmp, case + ".gguf")
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "derive_model.py"), path, out] + g["derive"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            report(False, f"{case}: derive_model.py", p.stderr.strip())
            return
        path = out
    if sha256_file(path) != g["sha256"]:
        report(False, f"{case}: the model is the file llama.cpp ran",
               "sha256 differs: nib synth's output changed; regenerate with tools/gen_golden_synth.py")
        return
    m = nib_lib.load(path)
    try:
        with m.context(n_ctx=1024, n_batch=256) as c:
            rows = c.decode(g["ids"], all_logits=True).astype(np.float64)
    finally:
        m.close()
    top_ids, top_l, lse = np.array(g["top_ids"]), np.array(g["top_logits"]), np.array(g["logsumexp"])
    # llama.cpp's distribution over its top-20 plus the rest; nib's over the same buckets
    p_top = np.exp(top_l - lse[:, None])
    p_rest = np.clip(1 - p_top.sum(1), 1e-12, None)
    mx = rows.max(1, keepdims=True)
    nib_lse = (mx + np.log(np.exp(rows - mx).sum(1, keepdims=True)))[:, 0]
    q_top = np.exp(np.take_along_axis(rows, top_ids, 1) - nib_lse[:, None])
    q_rest = np.clip(1 - q_top.sum(1), 1e-12, None)
    kl = (p_top * (np.log(p_top) - np.log(q_top))).sum(1) + p_rest * (np.log(p_rest) - np.log(q_rest))
    gaps = top_l[:, 0] - top_l[:, 1]
    flips = [(i, int(top_ids[i, 0]), int(rows[i].argmax()), float(gaps[i]))
             for i in range(len(rows)) if rows[i].argmax() != top_ids[i, 0]]
    bad_flips = [f for f in flips if f[3] >= NEAR_TIE]
    d = np.abs(np.take_along_axis(rows, top_ids, 1) - top_l).max()
    if g.get("metric") == "routed":
        share = float((kl > ROUTED_KL_POS).mean())
        report(float(np.median(kl)) < ROUTED_KL_MEDIAN_MAX and share <= ROUTED_SHARE_MAX,
               f"{case}: logits against llama.cpp {g['llama_cpp_version']} (routed)",
               f"{len(rows)} positions: median KL {np.median(kl):.2e}, mean {kl.mean():.2e}, "
               f"{share:.1%} of positions above {ROUTED_KL_POS} (max {kl.max():.3f}), top-1 {1 - len(flips) / len(rows):.1%}")
        return
    report(kl.mean() < KL_MEAN_MAX and kl.max() < KL_POS_MAX and d < LOGIT_DIFF_MAX and not bad_flips,
           f"{case}: logits against llama.cpp {g['llama_cpp_version']}",
           f"{len(rows)} positions: mean KL {kl.mean():.2e} (max {kl.max():.2e} at {int(kl.argmax())}), "
           f"top-1 {1 - len(flips) / len(rows):.1%}, {len(bad_flips)} flips past a gap of {NEAR_TIE}"
           f"{' ' + str(bad_flips[:3]) if bad_flips else ''}, max |logit diff| on the top-20 {d:.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "libnib.so"))
    ap.add_argument("--nib", default=os.path.join(ROOT, "build", "nib"))
    ap.add_argument("--golden", default=os.path.join(ROOT, "tests", "golden", "synth"))
    args = ap.parse_args()
    goldens = sorted(glob.glob(os.path.join(args.golden, "*.json")))
    report(bool(goldens), "synth golden files", f"{len(goldens)} in {args.golden}")
    nib = Nib(args.lib)
    with tempfile.TemporaryDirectory() as tmp:
        for path in goldens:
            with open(path, encoding="utf-8") as f:
                check(nib, args.nib, json.load(f), tmp)
    print(f"{PASSED} passed, {FAILED} failed, 0 skipped")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
