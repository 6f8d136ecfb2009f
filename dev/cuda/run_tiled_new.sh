#!/bin/sh
# Checks and timings of the tiled GEMV's formats in one device call, on
# binaries built here for sm_90 (nib, the GPU tests, the lab), stripped and
# carried as .devbin/bins.tar.xz (a tar.xz of the build tree's paths: the
# whole working tree and carry must stay under 64 MiB). Each part runs when
# its variable is set: TESTS (GPU test binaries), VERIFY ("shape:type" synth
# files through `nib verify`), MODELS x VARIANTS (tg128, e.g.
# "NIB_CUDA_TILED=0 NIB_CUDA_TILED=1"), LAB (kernel-lab rows, after its
# check-t32; LAB_SHAPES picks the shapes).
#   TESTS="test_gpu_gemv" MODELS="llama3-8b:Q2_K" VARIANTS="NIB_CUDA_TILED=0 NIB_CUDA_TILED=1" \
#   OUT=$OUT sh dev/cuda/run_tiled_new.sh       (repository root, on the GPU machine)
set -u
OUT=${OUT:-/tmp/out}
mkdir -p $OUT /tmp/b && tar xJf .devbin/bins.tar.xz -C /tmp/b
B=/tmp/b; L=$B/dev/cuda/gemv_lab
for t in ${TESTS:-}; do timeout 300 $B/tests/gpu/$t > $OUT/$t.log 2>&1; echo "$t exit $?: $(tail -1 $OUT/$t.log)"; grep -E "FAIL" $OUT/$t.log | head -5; done
for s in ${VERIFY:-}; do
  f=/tmp/v_$(echo $s | tr ':' '_').gguf
  $B/nib synth --shape ${s%%:*} --type ${s#*:} -o $f > /dev/null 2>&1
  timeout 240 $B/nib verify $f -n 32 -t 16 > $OUT/verify_$(basename $f).log 2>&1; echo "verify $s exit $?: $(grep -E 'PASS|FAIL|diverge|identical' $OUT/verify_$(basename $f).log | head -3 | tr '\n' ' ')"
done
for m in ${MODELS:-}; do for v in ${VARIANTS:-NONE=1}; do
  r=$(env $v timeout 120 $B/nib bench synth:$m -p 0 -n 128 -r 2 2>&1 | grep -E '\| tg|rror' | tr -s ' ' | head -3); echo "$m $v: $r"; done; done
if [ -x $L ] && [ -n "${LAB:-}" ]; then
  timeout 60 $L $OUT/check.md check-t32 > $OUT/check.log 2>&1; echo "check exit $?"; grep -E "check \(" $OUT/check.log | grep -v "ok)"
  LAB_SHAPES=${LAB_SHAPES:-4096x4096,4096x14336,14336x4096,4096x128256,4096x28672} timeout 300 $L $OUT/new.md ${LAB:-} > $OUT/new.log 2>&1
  echo "lab exit $?"; grep "^| " $OUT/new.md | grep -v "n/a\|K not\| 0.0 | 0.0 |"
fi
