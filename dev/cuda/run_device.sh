#!/bin/sh
# One device-machine session for the CUDA GEMV work: the CPU tests (that
# machine has AVX-512 VNNI), the GPU tests, and the kernel lab, logs to $OUT.
#   sh dev/cuda/run_device.sh     (from the repository root, on the GPU machine)
# Builds what it needs without the tokenizer's PCRE2 (not installed there).
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
B=/tmp/nibdev
mkdir -p $B && touch $B/.deps-ok   # skip tools/setup_deps.sh (no apt there)
CFL="-std=c11 -O2 -D_DEFAULT_SOURCE -Iinclude -Isrc -Itests -pthread"
lscpu | grep -o 'avx512[a-z_]*' | sort -u | tr '\n' ' ' > "$OUT/cpu_flags.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia_smi.txt" 2>&1

if [ -z "$SKIP_CPU" ]; then
echo "== CPU tests (test_cpu)"
objs=$(ls src/core/*.c src/quant/*.c src/cpu/*.c | sed "s|^|$B/|; s|\.c\$|.o|")
make -s BUILD=$B NIB_CUDA=0 -j16 $objs && cc $CFL tests/test_cpu.c $objs -lm -o $B/test_cpu &&
    $B/test_cpu > "$OUT/test_cpu.log" 2>&1; echo "test_cpu exit $?"
grep -i "avx512\|skip\|passed" "$OUT/test_cpu.log" | tail -12
fi

echo "== GPU tests (test_gpu_gemv)"
cobjs=$(ls src/cuda/*.cu | sed "s|^|$B/|; s|\.cu\$|.o|")
make -s BUILD=$B NIB_CUDA_ARCH=90 -j16 $cobjs $B/dev/cuda/gemv_lab $(ls src/core/*.c src/quant/*.c | sed "s|^|$B/|; s|\.c\$|.o|") 2>&1 | grep -v warning
CUDA_HOME=$(dirname $(dirname $(command -v nvcc)))
cc $CFL tests/gpu/test_gpu_gemv.c $cobjs $(ls src/core/*.c src/quant/*.c | sed "s|^|$B/|; s|\.c\$|.o|") \
    -L$CUDA_HOME/lib64 -lcudart_static -ldl -lrt -lstdc++ -lm -o $B/test_gpu_gemv &&
    $B/test_gpu_gemv > "$OUT/test_gpu.log" 2>&1; echo "test_gpu exit $?"
grep -v "^      " "$OUT/test_gpu.log"

echo "== kernel lab (library configuration; columns: format, K x N, graph us, GB/s, % of copy)"
$B/dev/cuda/gemv_lab "$OUT/gemv_lab.md" > "$OUT/gemv_lab.log" 2>&1; echo "lab exit $?"
grep "copy:" "$OUT/gemv_lab.log"
grep -E "^\| [A-Z]" "$OUT/gemv_lab.log" | grep -v "n/a" | awk -F'|' '{printf "%s %s %s %s %s\n", $2,$4,$7,$9,$10}'
if [ -n "$TUNE" ]; then
echo "== tuning sweep"
$B/dev/cuda/gemv_lab "$OUT/gemv_tune.md" $TUNE > "$OUT/gemv_tune.log" 2>&1; echo "tune exit $?"
grep -E "^\| [A-Z]" "$OUT/gemv_tune.log" | grep -v "n/a" | awk -F'|' '{printf "%s %s %s %s\n", $2,$4,$7,$10}'
fi
