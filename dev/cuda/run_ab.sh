#!/bin/sh
# A/B timing on the device: build nib and the named GPU tests only, run the
# tests, then `nib bench` for each "ENV=VALUE" setting x model.
#   VARIANTS="NIB_X=a NIB_X=b" MODELS="llama3-8b:Q4_K_M" TESTS="test_gpu_step" sh dev/cuda/run_ab.sh
OUT=${OUT:-/tmp/out}
B=${B:-/tmp/nibdev}
mkdir -p "$OUT" $B && touch $B/.deps-ok
CUDA_HOME=$(dirname $(dirname $(command -v nvcc)))
P=$(pwd)/dev/cuda/pcre2
LIBS="-L$P -lm -lpcre2-8 -pthread -L$CUDA_HOME/lib64 -lcudart_static -ldl -lrt -lstdc++"
T0=$(date +%s)
make -s BUILD=$B NIB_CUDA_ARCH=90 EXTRA_CFLAGS="-I$P" LDLIBS="$LIBS" -j16 $B/nib \
    $(for t in $TESTS; do echo $B/tests/gpu/$t; done) > "$OUT/build.log" 2>&1
echo "build exit $? in $(( $(date +%s) - T0 )) s"; grep -E "error" "$OUT/build.log" | head -20
for t in $TESTS; do
    timeout 300 $B/tests/gpu/$t > "$OUT/$t.log" 2>&1; echo "$t exit $?: $(tail -1 "$OUT/$t.log")"
    grep -E "^FAIL|FAIL " "$OUT/$t.log" | head -8
done
for m in $MODELS; do for v in ${VARIANTS:-NONE=1}; do
    r=$(env $v $B/nib bench synth:$m -p 0 -n ${TG:-128} -r ${REPS:-2} 2>&1 | grep -E '\| tg' | cut -d'|' -f5)
    echo "$m $v: $r"
done; done
