#!/bin/sh
# `nib verify` (GPU step against the CPU step, greedy) on every real model in
# models/ (make models fetches them), then on small random-weight models
# built in memory for the architectures the real ones do not cover (mixtures
# of experts, Gemma 2's soft-caps, Phi-3's fused matrices, Qwen3's QK-norm).
# Part of `make test-gpu`; without a GPU one skip with the reason.
#   sh tests/gpu/verify_models.sh BUILD/nib [STEPS]
NIB=${1:-build/nib}
N=${2:-64}
pass=0 fail=0 skip=0
line=$($NIB info 2>&1 | grep "^cuda:")
if [ -z "$line" ] || echo "$line" | grep -q "unavailable\|not usable"; then
    echo "SKIP verify: no usable CUDA device (nib info: $line)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
# verify_one NAME MODEL [options]: one `nib verify`, counted
verify_one() {
    name=$1; shift
    log=$(mktemp)
    if $NIB verify "$@" -n "$N" > "$log" 2>&1; then
        pass=$((pass + 1)); echo "ok    verify $name: $(grep -E 'greedy picks' "$log")"
    else
        fail=$((fail + 1)); echo "FAIL  verify $name"; tail -5 "$log"
    fi
    rm -f "$log"
}
for m in models/*.gguf; do
    [ -f "$m" ] && verify_one "$(basename "$m")" "$m"
done
[ $((pass + fail)) -eq 0 ] && { echo "SKIP verify: no models in models/ (make models)"; skip=1; }
# (the small models' 2,048 positions hold no default prompt: -c 4096)
for m in synth:tiny-qwen3moe:Q8_0 synth:tiny-mixtral:Q4_K_M synth:tiny-gemma2:Q4_K_M synth:tiny-phi3:Q8_0 \
         synth:tiny-qwen3:Q4_0; do
    verify_one "$m" "$m" -c 4096
done
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
