#!/bin/sh
# A/B timing on the device: run_step.sh (build nib and the GPU tests, run
# the tests named in TESTS), then `nib bench` for each "ENV=VALUE" setting x
# model, each comparison within one run.
#   VARIANTS="NIB_X=a NIB_X=b" MODELS="llama3-8b:Q4_K_M" TESTS="test_gpu_step" sh dev/cuda/run_ab.sh
B=${B:-/tmp/nibdev}
TESTS=${TESTS:-none} sh "$(dirname "$0")/run_step.sh"
for m in $MODELS; do for v in ${VARIANTS:-NONE=1}; do
    r=$(env $v $B/nib bench synth:$m -p 0 -n ${TG:-128} -r ${REPS:-2} 2>&1 | grep -E '\| tg' | cut -d'|' -f5)
    echo "$m $v: $r"
done; done
