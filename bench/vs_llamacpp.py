#!/usr/bin/env python3
"""CPU speed of nib against llama.cpp (llama-cpp-python), same machine, same run.

Run with the llama.cpp venv (tools/setup_llama_venv.sh):

    .venv-llama/bin/python bench/vs_llamacpp.py [--nib build/nib] [--threads 2] [--pp 128] [--tg 64] [--reps 3]
        [--model FILE.gguf ...] [--out DIR]

For each test model present (models/, or env NIB_MODELS_DIR), or each --model
given (a `nib synth` file, say), one engine after the other so that the two
never share the CPU:

  llama.cpp  pp: Llama.eval of PP pseudo-random tokens from an empty cache in
             one batch (n_batch 512, logits of the last token only); tg: greedy
             generation of TG tokens, one Llama.eval per token, from a cache
             holding one token. n_threads = n_threads_batch = THREADS. One
             warm-up of each, then REPS timed repetitions (mean and sd).
             The per-token Python overhead of Llama.eval (tens of microseconds)
             is included in tg; it is small next to a decode step.
  nib        `nib bench MODEL -p PP -n TG -r REPS -t THREADS --device cpu --json` (the same
             method: random prompt tokens, greedy generation from one token).
             If that subcommand is missing, `nib run MODEL -p TEXT -n TG --temp 0
             -t THREADS --device cpu` and its closing stderr line (prompt of
             about PP tokens).

Prints a table and writes OUT/<date>-cpu-vs-llamacpp.json and .md (OUT:
bench/results).
"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import numpy as np

import llama_cpp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def msd(xs):
    return statistics.mean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def bench_llama(path, threads, pp, tg, reps):
    llm = llama_cpp.Llama(model_path=path, n_ctx=max(512, pp + tg + 8), n_batch=512, n_threads=threads,
                          n_threads_batch=threads, logits_all=False, seed=0, verbose=False)
    n_vocab = llm.n_vocab()
    rng = np.random.default_rng(11)

    def last_logits():
        return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,))

    def run_pp(r):
        toks = [int(t) for t in rng.integers(0, n_vocab, pp)]
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(toks)
        return pp / (time.perf_counter() - t0)

    def run_tg():
        llm.reset()
        llm.eval([1 % n_vocab])
        seq = []
        t0 = time.perf_counter()
        for _ in range(tg):
            t = int(np.argmax(last_logits()))
            seq.append(t)
            llm.eval([t])
        return tg / (time.perf_counter() - t0), seq

    run_pp(-1)  # warm-up
    run_tg()
    pps = [run_pp(r) for r in range(reps)]
    tgs, seqs = [], []
    for _ in range(reps):
        s, seq = run_tg()
        tgs.append(s)
        seqs.append(seq)
    (pm, psd), (tm, tsd) = msd(pps), msd(tgs)
    return {"pp_tps": pm, "pp_tps_sd": psd, "tg_tps": tm, "tg_tps_sd": tsd,
            "greedy_tokens_identical": all(s == seqs[0] for s in seqs)}


RUN_RE = re.compile(r"prompt (\d+) tokens in ([\d.]+) s \(([\d.]+) tokens/s\); generated (\d+) tokens in "
                    r"([\d.]+) s \(([\d.]+) tokens/s\)")

FILLER = ("The quick brown fox jumps over the lazy dog while the farmer counts his sheep in the field. ")


def bench_nib(nib, path, threads, pp, tg, reps):
    cmd = [nib, "bench", path, "-p", str(pp), "-n", str(tg), "-r", str(reps), "-t", str(threads), "--device", "cpu",
           "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode == 0 or "{" in r.stdout:
        try:
            j = json.loads(r.stdout[r.stdout.index("{"):])
            j["method"] = " ".join(["nib", "bench", os.path.basename(path)] + cmd[3:])
            if r.returncode != 0:
                j["warning"] = r.stderr.strip()[-300:]
            return j
        except ValueError:
            pass
    bench_err = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["?"]
    # fallback: nib run; a prompt of about pp tokens (~4.5 characters per token)
    text = (FILLER * (pp * 5 // len(FILLER) + 1))[:int(pp * 4.4)]
    pps, tgs, n_prompt = [], [], None
    for _ in range(reps + 1):
        cmd = [nib, "run", path, "-p", text, "-n", str(tg), "--temp", "0", "-t", str(threads), "--device", "cpu"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        m = RUN_RE.search(r.stderr)
        if not m:
            return {"error": f"nib bench failed ({bench_err[0]}); nib run failed: "
                             f"{(r.stderr.strip().splitlines() or ['?'])[-1]}"}
        n_prompt = int(m.group(1))
        pps.append(float(m.group(3)))
        tgs.append(float(m.group(6)))
    pps, tgs = pps[1:], tgs[1:]  # the first run warms the page cache
    (pm, psd), (tm, tsd) = msd(pps), msd(tgs)
    return {"pp_tps": pm, "pp_tps_sd": psd, "tg_tps": tm, "tg_tps_sd": tsd, "n_prompt": n_prompt,
            "method": f"nib run -n {tg} --temp 0 -t {threads} (nib bench unavailable: {bench_err[0]}); "
                      f"prompt {n_prompt} tokens"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nib", default=os.path.join(ROOT, "build", "nib"))
    ap.add_argument("--models-dir", default=os.environ.get("NIB_MODELS_DIR", os.path.join(ROOT, "models")))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pp", type=int, default=128)
    ap.add_argument("--tg", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--model", action="append", default=None,
                    help="a GGUF file to compare instead of the test models (repeatable), e.g. one from nib synth")
    args = ap.parse_args()

    load_before = os.getloadavg()
    if load_before[0] > 0.5:
        print(f"vs_llamacpp: WARNING: load average {load_before[0]:.2f} before the run: other processes share "
              f"the CPU and the numbers will be low and noisy (llama.cpp's spinning threads suffer most)",
              file=sys.stderr)
    rows = []
    paths = args.model or [os.path.join(args.models_dir, name) for name in MODELS]
    for path in paths:
        name = os.path.basename(path)
        if not os.path.exists(path):
            print(f"skip {name}: no file {path}", file=sys.stderr)
            continue
        print(f"== {name}: llama.cpp ...", file=sys.stderr, flush=True)
        ll = bench_llama(path, args.threads, args.pp, args.tg, args.reps)
        print(f"   llama.cpp pp{args.pp} {ll['pp_tps']:.1f} t/s, tg{args.tg} {ll['tg_tps']:.1f} t/s", file=sys.stderr)
        print(f"== {name}: nib ...", file=sys.stderr, flush=True)
        nb = bench_nib(args.nib, path, args.threads, args.pp, args.tg, args.reps)
        if "error" in nb:
            print(f"   nib: {nb['error']}", file=sys.stderr)
        else:
            print(f"   nib pp{args.pp} {nb['pp_tps']:.1f} t/s, tg{args.tg} {nb['tg_tps']:.1f} t/s", file=sys.stderr)
        rows.append({"model": name, "llama_cpp": ll, "nib": nb})

    date = datetime.date.today().isoformat()
    hdr = (f"| model | llama.cpp pp{args.pp} t/s | nib pp{args.pp} t/s | nib/llama.cpp | "
           f"llama.cpp tg{args.tg} t/s | nib tg{args.tg} t/s | nib/llama.cpp |")
    lines = [hdr, "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ll, nb = r["llama_cpp"], r["nib"]
        if "error" in nb:
            lines.append(f"| {r['model']} | {ll['pp_tps']:.1f} ± {ll['pp_tps_sd']:.1f} | n/a | n/a | "
                         f"{ll['tg_tps']:.1f} ± {ll['tg_tps_sd']:.1f} | n/a | n/a |")
            continue
        r["pp_ratio"] = nb["pp_tps"] / ll["pp_tps"]
        r["tg_ratio"] = nb["tg_tps"] / ll["tg_tps"]
        lines.append(f"| {r['model']} | {ll['pp_tps']:.1f} ± {ll['pp_tps_sd']:.1f} | "
                     f"{nb['pp_tps']:.1f} ± {nb.get('pp_tps_sd', 0):.1f} | {r['pp_ratio']:.2f} | "
                     f"{ll['tg_tps']:.1f} ± {ll['tg_tps_sd']:.1f} | {nb['tg_tps']:.1f} ± {nb.get('tg_tps_sd', 0):.1f} | "
                     f"{r['tg_ratio']:.2f} |")
    table = "\n".join(lines)
    print(table)

    load_after = os.getloadavg()
    machine = {"cpu": cpu_name(), "cpus": os.cpu_count(), "os": platform.platform(),
               "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in load_after]}
    doc = {"date": date, "machine": machine, "llama_cpp_python": llama_cpp.__version__, "threads": args.threads,
           "pp": args.pp, "tg": args.tg, "reps": args.reps, "results": rows}
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, f"{date}-cpu-vs-llamacpp")
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    notes = [f"# nib vs llama.cpp on CPU, {date}", "",
             f"Machine: {machine['cpu']}, {machine['cpus']} CPUs; {args.threads} threads for both engines. "
             f"llama.cpp through llama-cpp-python {llama_cpp.__version__} (built from source, default CMake flags). "
             f"Load average (1 min) {load_before[0]:.2f} before the run, {load_after[0]:.2f} after.",
             "",
             f"pp{args.pp}: {args.pp} random tokens in one batch from an empty cache; tg{args.tg}: greedy "
             f"generation of {args.tg} tokens one at a time; mean ± sd of {args.reps} repetitions after a warm-up. "
             "Ratio = nib / llama.cpp (above 1: nib is faster). Written by bench/vs_llamacpp.py.", "", table, ""]
    for r in rows:
        if "method" in r["nib"]:
            notes.append(f"- {r['model']}: nib measured with `{r['nib']['method']}`")
    with open(base + ".md", "w") as f:
        f.write("\n".join(notes) + "\n")
    print(f"wrote {base}.json and {base}.md", file=sys.stderr)


if __name__ == "__main__":
    main()
