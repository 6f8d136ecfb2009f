#!/bin/sh
# The kernel lab's pending experiment in one device call (bench/gpu-decode-notes.md
# v50: the gate/up GLU split over K), its check first, log and table to $OUT.
#   make NIB_CUDA_ARCH=90 BUILD=build gpu-lab      (here; carry build/dev/cuda/gemv_lab)
#   sh dev/cuda/run_lab_pending.sh                 (repository root, on the GPU machine)
OUT=${OUT:-/tmp/out}
L=${LAB:-build/dev/cuda/gemv_lab}
mkdir -p "$OUT"
LAB_SHAPES=4096x28672 timeout 240 $L $OUT/v50.md check-gks /gks- =Q4_K/glu-lib =READ/q4k > $OUT/v50.log 2>&1
echo "v50: exit $?"; grep -E "check" $OUT/v50.log; grep "^| " $OUT/v50.md
# v51: 8 warps a row group (split K 8) on the long rows, beside the library's launches
LAB_SHAPES=14336x4096 timeout 120 $L $OUT/v51.md =Q4_K/cf-w8r2u1k8 =Q4_K/cf-w8r4u1k8 =Q4_K/cf-w8r1u1k8 \
    =Q6_K/cf-w8r2u1k8 =Q6_K/cf-w8r1u1k8 =Q4_K/lib14 =Q6_K/cf-w4r2u1k4 =READ/q4k =READ/q6k > $OUT/v51.log 2>&1
echo "v51: exit $?"; grep "^| " $OUT/v51.md
