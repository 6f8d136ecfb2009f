#!/bin/sh
# Per-kernel times of the decode step under Nsight Compute, on the device
# machine: run_step.sh builds nib (no tests), then ncu profiles LAUNCHES
# kernel launches (graph nodes one by one) after skipping SKIP (warm-up and
# the first tokens), and dev/cuda/ncu_summary.py groups them per kind.
# Each kernel runs alone under ncu (serialised, caches flushed between
# kernels): the times are each kernel's own, without the overlap that PDL
# gives inside a graph replay, so they add up to more than a token takes.
#   SPEC=llama3-8b:Q4_K_M sh dev/cuda/run_ncu.sh     (repository root)
OUT=${OUT:-/tmp/out}
B=${B:-/tmp/nibdev}
SPEC=${SPEC:-llama3-8b:Q4_K_M}
TESTS=none sh "$(dirname "$0")/run_step.sh"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
# EXTRA: more metrics, e.g. whether a kernel is bound by instruction issue:
#   EXTRA=smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__registers_per_thread,launch__grid_size
timeout 400 $NCU --clock-control none --graph-profiling node --launch-skip ${SKIP:-600} \
    --launch-count ${LAUNCHES:-280} --metrics "$M${EXTRA:+,$EXTRA}" \
    --csv --log-file "$OUT/ncu.csv" $B/nib bench "synth:$SPEC" -p 0 -n 8 -r 1 > "$OUT/ncu_run.log" 2>&1
echo "ncu exit $?"
python3 "$(dirname "$0")/ncu_summary.py" "$OUT/ncu.csv"
