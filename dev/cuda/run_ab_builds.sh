#!/bin/sh
# A/B of two builds in one device run: run_step.sh builds the working tree
# (and runs the tests in TESTS), then the tree with PATCH reversed is built
# too, and `nib bench` runs for each model x "BUILD:ENV=VALUE" variant
# (BUILD new or old), in one run so the machine is the same for both.
#   git diff src/cuda/ops.cu > dev/cuda/ab.patch    (here, before the call)
#   PATCH=dev/cuda/ab.patch MODELS="llama3-8b:Q4_K_M" VARIANTS="old:NONE=1 new:NONE=1" sh dev/cuda/run_ab_builds.sh
B=${B:-/tmp/nibdev}
OUT=${OUT:-/tmp/out}
TESTS="${TESTS:-none}" sh "$(dirname "$0")/run_step.sh"
cp $B/nib /tmp/nib_new
patch -s -R -p1 < "$PATCH" || { echo "patch $PATCH does not reverse"; exit 1; }
CUDA_HOME=$(dirname $(dirname $(command -v nvcc)))
P=$(pwd)/dev/cuda/pcre2
make -s BUILD=$B NIB_CUDA_ARCH=90 EXTRA_CFLAGS="-I$P" \
    LDLIBS="-L$P -lm -lpcre2-8 -pthread -L$CUDA_HOME/lib64 -lcudart_static -ldl -lrt -lstdc++" -j16 $B/nib \
    > "$OUT/build_old.log" 2>&1 || echo "old build failed: $OUT/build_old.log"
cp $B/nib /tmp/nib_old
patch -s -p1 < "$PATCH"
cp /tmp/nib_new $B/nib  # later steps of the run use the new build
for m in $MODELS; do for v in $VARIANTS; do
    bin=${v%%:*}; ev=${v#*:}
    r=$(env $ev /tmp/nib_$bin bench synth:$m -p 0 -n ${TG:-128} -r ${REPS:-3} 2>&1 | grep -E '\| tg' | cut -d'|' -f5)
    echo "$m $bin $ev: $r"
done; done
