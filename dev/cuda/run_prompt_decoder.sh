#!/bin/sh
# The tiled prompt decoder on the device machine, in one call: test_gpu_gemm,
# nib verify on synth 1B files whose prompts decode tiled matrices, the
# decoder lab (dev/cuda/dequant_lab.cu), and Llama-3-8B-shaped pp512 with the
# tiled layout off and on (NIB_CUDA_TILED), then tg128. Binaries built here
# for sm_90, stripped and carried as .devbin/bins.tar.xz (nib,
# tests/gpu/test_gpu_gemm, dev/cuda/dequant_lab).
#   OUT=$OUT sh dev/cuda/run_prompt_decoder.sh     (repository root)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT /tmp/b && tar xJf .devbin/bins.tar.xz -C /tmp/b; B=/tmp/b
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
timeout 200 $B/tests/gpu/test_gpu_gemm > $OUT/gemm.log 2>&1; echo "gemm exit $?: $(tail -1 $OUT/gemm.log)"; grep FAIL $OUT/gemm.log | head
for s in llama3.2-1b:Q3_K_M llama3.2-1b:Q2_K llama3.2-1b:IQ2_XXS; do f=/tmp/v_$(echo $s | tr ':' '_').gguf; $B/nib synth --shape ${s%%:*} --type ${s#*:} -o $f >/dev/null 2>&1; timeout 120 $B/nib verify $f -n 32 -t 16 > $OUT/verify_${s#*:}.log 2>&1; echo "verify $s exit $?: $(grep -E 'PASS|FAIL|identical' $OUT/verify_${s#*:}.log | head -2 | tr '\n' ' ')"; done
timeout 150 $B/dev/cuda/dequant_lab > $OUT/dqlab.log 2>&1; echo "dqlab exit $?"; tail -25 $OUT/dqlab.log
for m in Q4_K_M Q3_K_M Q2_K IQ2_XXS; do for v in NIB_CUDA_TILED=0 NIB_CUDA_TILED=1; do r=$(env $v timeout 90 $B/nib bench synth:llama3-8b:$m -p 512 -n 0 -r 2 2>&1 | grep -E '\| pp|rror' | tr -s ' ' | head -2); echo "$m $v: $r"; done; done
r=$(timeout 90 $B/nib bench synth:llama3-8b:Q4_K_M -p 0 -n 128 -r 2 2>&1 | grep -E '\| tg|rror' | tr -s ' '); echo "tg Q4_K_M: $r"
