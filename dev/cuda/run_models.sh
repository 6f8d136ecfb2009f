#!/bin/sh
# After run_step.sh has built nib: join the real models carried in pieces,
# check their checksums, and run `nib verify` and a greedy answer on each;
# then synth benches (BENCH="shape:type ..."), logs to $OUT.
OUT=${OUT:-/tmp/out}
MODELS=${MODELS:-/tmp/models}
B=${B:-/tmp/nibdev}
mkdir -p "$OUT"
cd $MODELS 2>/dev/null && {
    [ -f smol.ab ] && cat smol.aa smol.ab > SmolLM2-135M-Instruct.Q4_1.gguf && rm -f smol.aa smol.ab
    [ -f gemma.ad ] && cat gemma.aa gemma.ab gemma.ac gemma.ad gemma.ae > gemma-3-270m-q4_k_m.gguf && rm -f gemma.a?
    ls -la; cd - > /dev/null; }
for f in $MODELS/*.gguf; do
    [ -f "$f" ] || continue
    case $(basename $f) in  # the files tools/fetch_models.sh rebuilds
    SmolLM2-135M-Instruct.Q4_1.gguf) want=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 ;;
    gemma-3-270m-q4_k_m.gguf) want=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 ;;
    *) want=unknown ;;
    esac
    got=$(sha256sum "$f" | cut -d' ' -f1)
    [ "$want" = "$got" ] && echo "$(basename $f): checksum ok" || { echo "$(basename $f): CHECKSUM MISMATCH"; continue; }
    n=$(basename $f .gguf)
    timeout 300 $B/nib verify "$f" -n ${VERIFY_N:-64} -t 16 > "$OUT/verify_$n.log" 2>&1
    echo "verify $n exit $?: $(grep -E 'greedy picks|max .logit|verdict' "$OUT/verify_$n.log" | tr '\n' ' ')"
    $B/nib run "$f" -p "$(printf '<|im_start|>user\nWhat is the capital of France? Answer in one sentence.<|im_end|>\n<|im_start|>assistant\n')" \
        -n 24 --temp 0 > "$OUT/run_$n.log" 2>&1; echo "run $n: $(head -c 300 "$OUT/run_$n.log" | tr '\n' ' ' | tail -c 300)"
    $B/nib bench "$f" -p 512 -n 128 -r 3 > "$OUT/bench_$n.log" 2>&1; grep -E "^\||roofline" "$OUT/bench_$n.log"
done
for spec in $BENCH; do
    $B/nib bench "synth:$spec" -p 512 -n 128 -r 3 $BENCH_ARGS > "$OUT/bench_$(echo $spec | tr ':' '_').log" 2>&1
    echo "bench $spec exit $?"; grep -E "^\| synth|roofline|WARNING|nib:" "$OUT/bench_$(echo $spec | tr ':' '_').log" | grep -v loading
done
