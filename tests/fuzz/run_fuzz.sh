#!/bin/sh
# Runs the libFuzzer harnesses: first the regression files of tests/corpus/regress
# (every input that once made a harness fail, replayed once each), then each
# harness fuzzing for SECONDS from its seeds, as many at once as there are cores
# (FUZZ_JOBS).
#
#   sh tests/fuzz/run_fuzz.sh SAN_DIR SECONDS GEN_HOSTILE [smoke|long]
#
# SAN_DIR holds the harnesses (SAN_DIR/fuzz/fuzz_NAME, built by the Makefile).
# Seeds are written at run time: gen_hostile's tiny models, vocabulary texts
# and chat templates (tests/golden/chat), plus the whole malformed-file corpus
# for the GGUF and model harnesses. "smoke" (make test) fuzzes into a
# temporary corpus; "long" (make fuzz) keeps SAN_DIR/fuzz/corpus/NAME between
# runs so each run starts where the last one stopped. A crash leaves its input
# in SAN_DIR/fuzz/crashes/: fix the bug, then copy the input to
# tests/corpus/regress/NAME/ so the replay keeps it fixed.
#
# Ends with "N passed, N failed, N skipped".
san=$1; secs=$2; gen=$3; mode=${4:-smoke}
harnesses="gguf model tokenizer chat"
pass=0; fail=0; skip=0
bad() { fail=$((fail + 1)); echo "FAIL  $1"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# the sanitizers' own reports make libFuzzer stop; leaks are looked for at exit
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

seeds=$tmp/seeds
"$gen" seeds "$seeds" tests/golden/chat >/dev/null || { bad "gen_hostile could not write the seeds"; }
"$gen" corpus "$tmp/malformed" >/dev/null || { bad "gen_hostile could not write the malformed corpus"; }
rm -f "$tmp/malformed/manifest.tsv"
mkdir -p "$san/fuzz/crashes"

# fuzz_one NAME: replay, then fuzz; prints its result lines ("ok ..." / "FAIL ...")
fuzz_one() {
    h=$1
    bin=$san/fuzz/fuzz_$h
    if [ ! -x "$bin" ]; then echo "FAIL  fuzz_$h: $bin was not built"; return; fi

    # ---- the regression files: each made this harness fail once ----
    reg=tests/corpus/regress/$h
    n_reg=$(find "$reg" -type f 2>/dev/null | wc -l)
    if [ "$n_reg" -gt 0 ]; then
        if find "$reg" -type f -print0 | xargs -0 "$bin" -runs=1 >"$tmp/$h.replay" 2>&1; then
            echo "ok    fuzz_$h: $n_reg regression files replay without a failure"
        else
            echo "FAIL  fuzz_$h: a regression file fails again:"
            grep -E 'ERROR|runtime error|FUZZ_CHECK|Running:|SUMMARY' "$tmp/$h.replay" | tail -n 8
        fi
    fi

    # ---- fuzzing ----
    case $h in
    gguf) extra="$seeds/gguf $seeds/model $tmp/malformed"; len=131072;;
    model) extra="$seeds/model $tmp/malformed"; len=131072;;
    tokenizer) extra="$seeds/tokenizer"; len=4096;;
    chat) extra="$seeds/chat"; len=16384;;
    esac
    if [ "$mode" = long ]; then corpus=$san/fuzz/corpus/$h; else corpus=$tmp/corpus-$h; fi
    mkdir -p "$corpus"
    d=$h; [ "$h" = model ] && d=gguf   # the loader reads the same keys
    dict=""; [ -f "tests/fuzz/$d.dict" ] && dict="-dict=tests/fuzz/$d.dict"
    t0=$(date +%s)
    # shellcheck disable=SC2086
    "$bin" "$corpus" $extra -max_total_time="$secs" -max_len="$len" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$san/fuzz/crashes/${h}-" $dict >"$tmp/$h.log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$h.log" | tail -n 1)
    cov=$(grep -oE 'cov: [0-9]+' "$tmp/$h.log" | tail -n 1)
    n_corpus=$(find "$corpus" -type f | wc -l)
    if [ "$rc" = 0 ]; then
        echo "ok    fuzz_$h: ${runs:-?} runs in $(( $(date +%s) - t0 )) s, ${cov:-cov: ?} edges, corpus of $n_corpus inputs, no failure"
    else
        echo "FAIL  fuzz_$h: failed after ${runs:-?} runs (exit $rc):"
        grep -E 'ERROR|runtime error|FUZZ_CHECK|SUMMARY|Test unit written|==[0-9]+== ' "$tmp/$h.log" | head -n 12
        grep -A12 -E 'ERROR: AddressSanitizer|runtime error' "$tmp/$h.log" | grep -E '^ +#[0-9]' | head -n 8
    fi
}

# FUZZ_JOBS harnesses at a time (default: the machine's cores); each gets SECONDS
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
set -- $harnesses
while [ $# -gt 0 ]; do
    batch=""
    k=0
    while [ $# -gt 0 ] && [ $k -lt "$jobs" ]; do
        fuzz_one "$1" > "$tmp/$1.result" &
        batch="$batch $1"; k=$((k + 1)); shift
    done
    wait
    for h in $batch; do
        cat "$tmp/$h.result"
        pass=$((pass + $(grep -c '^ok ' "$tmp/$h.result")))
        fail=$((fail + $(grep -c '^FAIL ' "$tmp/$h.result")))
    done
done

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
