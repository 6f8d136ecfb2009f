#!/bin/sh
# One device-machine session for the GPU forward step: build nib and the GPU
# tests (sm_90), run the tests, then `nib verify` on the real models found in
# $MODELS and any synth benches asked for, logs to $OUT.
#   sh dev/cuda/run_step.sh          (repository root, on the GPU machine)
# The machine has no PCRE2 and no network: dev/cuda/pcre2/ (pcre2.h and
# libpcre2-8.a copied from this machine's Debian package) travels with the call.
OUT=${OUT:-/tmp/out}
MODELS=${MODELS:-/tmp/models}
B=${B:-/tmp/nibdev}
mkdir -p "$OUT" $B && touch $B/.deps-ok
CUDA_HOME=$(dirname $(dirname $(command -v nvcc)))
P=$(pwd)/dev/cuda/pcre2
LIBS="-L$P -lm -lpcre2-8 -pthread -L$CUDA_HOME/lib64 -lcudart_static -ldl -lrt -lstdc++"
T0=$(date +%s)
make -s BUILD=$B NIB_CUDA_ARCH=90 EXTRA_CFLAGS="-I$P" LDLIBS="$LIBS" -j16 $B/nib \
    $(ls tests/gpu/test_*.c | sed "s|^tests/|$B/tests/|; s|\.c\$||") > "$OUT/build.log" 2>&1
echo "build exit $? in $(( $(date +%s) - T0 )) s"; grep -E "error|warning" "$OUT/build.log" | head -20
for t in $B/tests/gpu/test_*; do
    [ -x "$t" ] || continue
    n=$(basename $t)
    if [ -n "$TESTS" ] && ! echo " $TESTS " | grep -q " $n "; then continue; fi
    timeout 300 $t > "$OUT/$n.log" 2>&1; echo "$n exit $?: $(tail -1 "$OUT/$n.log")"
    grep -E "^FAIL|FAIL " "$OUT/$n.log" | head -8
done
