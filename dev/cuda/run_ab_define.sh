#!/bin/sh
# A/B of a compile-time switch in one device run: run_step.sh builds the tree
# as it is (and runs the tests in TESTS), then a second build with DEFINE
# (a C compiler define, e.g. -DGEMM_MIN_TOKENS=16) recompiles the C file(s) in TOUCH, and
# `nib bench` runs for each model x "BUILD:ENV=VALUE" variant (BUILD off or on).
#   DEFINE=-DGEMM_MIN_TOKENS=16 TOUCH=src/model/context_cuda.c MODELS="llama3-8b:Q4_K_M" \
#   VARIANTS="off:NONE=1 on:NONE=1 off:NONE=2 on:NONE=2" sh dev/cuda/run_ab_define.sh
B=${B:-/tmp/nibdev}
OUT=${OUT:-/tmp/out}
TESTS="${TESTS:-none}" sh "$(dirname "$0")/run_step.sh"
cp $B/nib /tmp/nib_off
CUDA_HOME=$(dirname $(dirname $(command -v nvcc)))
P=$(pwd)/dev/cuda/pcre2
LIBS="-L$P -lm -lpcre2-8 -pthread -L$CUDA_HOME/lib64 -lcudart_static -ldl -lrt -lstdc++"
rm -rf /tmp/nib_on_build && cp -a $B /tmp/nib_on_build && touch $TOUCH
make -s BUILD=/tmp/nib_on_build NIB_CUDA_ARCH=90 EXTRA_CFLAGS="-I$P $DEFINE" LDLIBS="$LIBS" -j16 \
    /tmp/nib_on_build/nib > "$OUT/build_on.log" 2>&1 || echo "build with $DEFINE failed: $OUT/build_on.log"
cp /tmp/nib_on_build/nib /tmp/nib_on
for m in $MODELS; do for v in $VARIANTS; do
    bin=${v%%:*}; ev=${v#*:}
    r=$(env $ev /tmp/nib_$bin bench synth:$m -p 0 -n ${TG:-128} -r ${REPS:-3} 2>&1 | grep -E '\| tg' | cut -d'|' -f5)
    echo "$m $bin $ev: $r"
done; done
