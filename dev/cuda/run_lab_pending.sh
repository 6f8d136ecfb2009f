#!/bin/sh
# The kernel lab's pending experiment in one device call (bench/gpu-decode-notes.md
# v55: the tiled GEMV, a lane a block), its check first, log and tables to $OUT.
#   make NIB_CUDA_ARCH=90 BUILD=build gpu-lab      (here; carry build/dev/cuda/gemv_lab)
#   sh dev/cuda/run_lab_pending.sh                 (repository root, on the GPU machine)
OUT=${OUT:-/tmp/out}
L=${LAB:-build/dev/cuda/gemv_lab}
mkdir -p "$OUT"
timeout 60 $L $OUT/check.md check-t32 > $OUT/check.log 2>&1
echo "check: exit $?"; grep -E "check \(" $OUT/check.log
LAB_SHAPES=14336x4096 timeout 100 $L $OUT/k14336.md =Q4_K/t32ks-w7g4 =Q4_K/lib14 =Q6_K/t32ks-w7g4 =Q6_K/lib14 \
    =READ/q4k =READ/q6k > $OUT/k14336.log 2>&1
echo "k14336: exit $?"; grep "^| " $OUT/k14336.md
LAB_SHAPES=4096x14336,4096x4096,4096x128256,4096x1024,4096x6144 timeout 200 $L $OUT/k4096.md =Q4_K/t32-w8g2b0 \
    =Q6_K/t32-w4g2b0 =Q4_K/sq-lib =Q4_K =Q6_K =Q4_K/hst16 =Q6_K/hst8 =Q6_K/ks4u1 =READ/q4k =READ/q6k > $OUT/k4096.log 2>&1
echo "k4096: exit $?"; grep "^| " $OUT/k4096.md
LAB_SHAPES=4096x28672 timeout 100 $L $OUT/glu.md =Q4_K/t32glu-w8g2 =Q4_K/glu-lib =READ/q4k > $OUT/glu.log 2>&1
echo "glu: exit $?"; grep "^| " $OUT/glu.md
