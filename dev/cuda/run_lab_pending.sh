#!/bin/sh
# The kernel lab's pending experiments in one device call (bench/gpu-decode-notes.md
# v44: Q4_K in half items; v45: Q4_0/Q8_0 grouped; the loads-alone rows of v41 on
# today's dots), each with its check first, logs and tables to $OUT.
#   make NIB_CUDA_ARCH=90 BUILD=build gpu-lab      (here; carry build/dev/cuda/gemv_lab)
#   sh dev/cuda/run_lab_pending.sh                 (repository root, on the GPU machine)
OUT=${OUT:-/tmp/out}
L=${LAB:-build/dev/cuda/gemv_lab}
mkdir -p "$OUT"
LAB_SHAPES=14336x4096,4096x4096,4096x28672 timeout 240 $L $OUT/v44.md check-h /h- =Q4_K/lib14 =Q4_K/sq-lib \
    =Q4_K/glu-lib =Q4_K/ld-lib14 =Q4_K/ld-sq =Q4_K/ld-glu =Q6_K/lib14 =Q6_K/ld-lib14 =READ/q4k =READ/q6k \
    > $OUT/v44.log 2>&1
echo "v44 and loads-alone: exit $?"; grep -E "check" $OUT/v44.log; grep "^| " $OUT/v44.md
LAB_SHAPES=14336x4096,4096x4096 timeout 240 $L $OUT/v45.md check-g /g- =Q4_0/lib14 =Q8_0/lib14 =Q4_0/sq-lib \
    =Q8_0/sq-lib =READ/Q4_0 =READ/q8_0 > $OUT/v45.log 2>&1
echo "v45: exit $?"; grep -E "check" $OUT/v45.log; grep "^| " $OUT/v45.md
