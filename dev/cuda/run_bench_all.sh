#!/bin/sh
# The GPU decode benchmark table for bench/results/: every synth shape x type
# (`nib bench synth:SHAPE:TYPE -p 512 -n 128 -r 3`), then decode after a long
# context on Llama-3-8B Q4_K_M (-d DEPTH), logs and a markdown table to $OUT.
#   sh dev/cuda/run_bench_all.sh      (after run_step.sh has built $B/nib)
OUT=${OUT:-/tmp/out}
B=${B:-/tmp/nibdev}
SHAPES=${SHAPES:-"llama3-8b llama3.2-1b qwen2.5-0.5b qwen2.5-7b"}
TYPES=${TYPES:-"Q4_0 Q8_0 Q4_K_M"}
DEPTHS=${DEPTHS:-"4096 16384 32768"}
LOGS=${LOGS:-$OUT}          # per-run JSON; keep few files under $OUT if it is fetched
PP=${PP:-512}; TG=${TG:-128}; REPS=${REPS:-3}
mkdir -p "$LOGS"
T="$OUT/bench_table.md"
echo "| model | test | t/s | MB per token | GB/s | % of copy BW | tokens identical across reps |" > "$T"
echo "|---|---|---|---|---|---|---|" >> "$T"
for sh in $SHAPES; do for ty in $TYPES; do
    log="$LOGS/bench_${sh}_$ty.json"
    $B/nib bench "synth:$sh:$ty" -p $PP -n $TG -r $REPS --json > "$log" 2> "$log.err"
    python3 - "$log" "$sh $ty" >> "$T" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"| {sys.argv[2]} | failed: {e} | | | | | |"); sys.exit()
if j['pp']: print(f"| {sys.argv[2]} | pp{j['pp']} | {j['pp_tps']:.0f} ± {j['pp_tps_sd']:.0f} | | | | |")
if j['tg']: print(f"| {sys.argv[2]} | tg{j['tg']} | {j['tg_tps']:.1f} ± {j['tg_tps_sd']:.1f} | {j['bytes_per_token']/1e6:.1f} | "
      f"{j['effective_gbs']:.0f} | {j['roofline_pct']:.1f}% of {j['probe_gbs']:.0f} | {j['greedy_tokens_identical']} |")
PY
    tail -1 "$T"
done; done
for d in $DEPTHS; do
    log="$LOGS/bench_depth_$d.json"
    $B/nib bench synth:llama3-8b:Q4_K_M -p 0 -n 64 -r 1 -d $d --json > "$log" 2> "$log.err"
    python3 - "$log" "$d" >> "$T" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"| llama3-8b Q4_K_M | d{sys.argv[2]} failed: {e} | | | | | |"); sys.exit()
print(f"| llama3-8b Q4_K_M | tg{j['tg']} @ d{j['depth']} | {j['tg_tps']:.1f} | {j['bytes_per_token']/1e6:.1f} | "
      f"{j['effective_gbs']:.0f} | {j['roofline_pct']:.1f}% of {j['probe_gbs']:.0f} | {j['greedy_tokens_identical']} |")
PY
    tail -1 "$T"
done
