#!/bin/sh
# The SASS of every src/cuda/*.cu for one architecture, one file each, for
# checking that a change meant to keep the code (a cleanup, a helper shared)
# does keep it, without a GPU:
#   sh dev/cuda/sass_dump.sh /tmp/before   (on the old tree)
#   sh dev/cuda/sass_dump.sh /tmp/after    (on the new one)
#   diff -rq /tmp/before /tmp/after
# Needs cuobjdump, which the toolkit may lack: `pip download --no-deps
# nvidia-cuda-cuobjdump` and unzip the wheel (nvidia/cu13/bin/cuobjdump),
# then CUOBJDUMP=that path. Addresses are dropped from the listing. Two
# compiles of the same dequant.cu differ in one kernel's scheduling, so that
# file is no evidence either way.
D=${1:?usage: sass_dump.sh OUTDIR}
ARCH=${ARCH:-90}
CUOBJDUMP=${CUOBJDUMP:-cuobjdump}
NVCC=${NVCC:-nvcc}
JOBS=${JOBS:-2}
mkdir -p "$D"
for f in src/cuda/*.cu; do
    b=$(basename "$f" .cu)
    ( $NVCC -O3 -std=c++17 -gencode arch=compute_$ARCH,code=sm_$ARCH -Iinclude -Isrc -cubin -o "$D/$b.cubin" "$f" &&
      $CUOBJDUMP -sass "$D/$b.cubin" | sed 's@/\*[0-9a-f]\{4\}\*/@@' > "$D/$b.sass" && rm -f "$D/$b.cubin" ) &
    while [ "$(jobs -p | wc -l)" -ge "$JOBS" ]; do sleep 1; done
done
wait
