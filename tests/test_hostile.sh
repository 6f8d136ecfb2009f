#!/bin/sh
# Hostile input at the CLI: the malformed-file corpus, bad options, bad
# prompts, out of memory, and a whole generation under ASan/UBSan/LeakSanitizer.
#
#   sh tests/test_hostile.sh NIB NIB_SAN GEN_HOSTILE [short|long]
#
# NIB is the normal build; it runs under `ulimit -v` (512 MiB), so a file that
# makes nib allocate memory in proportion to a number it merely claims fails
# with the wrong message. NIB_SAN is the CLI built with -fsanitize=address,
# undefined ("-" if there is none: those checks are skipped, with the reason);
# HOSTILE_SAN_TESTS lists C unit tests built with the same sanitizers, run last.
# GEN_HOSTILE writes the corpus (tests/gen_hostile.c) with a manifest of what
# `nib inspect` and `nib run` must say about each file. Every file is one test:
# it passes when both commands, in both builds, answer as the manifest says
# within the time limit, with no sanitizer report. "long" (make fuzz) also runs
# longer generations and chats of the real models under the sanitizers.
#
# Ends with "N passed, N failed, N skipped".
nib=$1; nib_san=$2; gen=$3; mode=${4:-short}
models=${NIB_MODELS:-models}
# ulimit -v for the normal build: 512 MiB. Every corpus file is under 200 KB and
# runs in a few MB (all pass at 256 MiB); a claimed count turned into an
# allocation fails here with the wrong message.
mem_kb=${HOSTILE_MEM_KB:-524288}
limit_s=${HOSTILE_TIMEOUT_S:-20}    # per command; nib answers a bad file in milliseconds
# allocator_may_return_null: a failed malloc returns NULL as in a normal build,
# so out-of-memory paths are tested rather than reported by ASan.
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:abort_on_error=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
SAN_REPORT='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer|AddressSanitizer:DEADLYSIGNAL'
RUN_ARGS="-p hello --temp 0 -n 4 -t 1 -c 32"

# ---- one command against one expectation ---------------------------------------------------
# check EXPECT RC LOG: "" when it matches, else why not
check() {
    exp=$1; rc=$2; log=$3
    if grep -qE "$SAN_REPORT" "$log"; then echo "sanitizer report: $(grep -m1 -E "$SAN_REPORT" "$log")"; return; fi
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "timed out after ${limit_s}s"; return; fi
    if [ "$rc" -ge 128 ]; then echo "killed by signal $((rc - 128))"; return; fi
    case $exp in
    ok) [ "$rc" = 0 ] || echo "exit $rc, expected success: $(grep -v '^nib: loading' "$log" | head -c 300)";;
    ok:*) [ "$rc" = 0 ] || { echo "exit $rc, expected success: $(head -c 300 "$log")"; return; }
          grep -qE -- "${exp#ok:}" "$log" || echo "no warning matching '${exp#ok:}'";;
    fail:*) [ "$rc" != 0 ] || { echo "exit 0, expected an error matching '${exp#fail:}'"; return; }
            grep -qE -- "${exp#fail:}" "$log" || echo "message does not match '${exp#fail:}': $(grep -v '^nib: loading' "$log" | head -c 300)";;
    esac
}

# ---- worker: one corpus file, four commands (re-invoked through xargs -P) --------------------
if [ "$1" = --one ]; then
    nib=$2; nib_san=$3; dir=$4; name=$5; exp_inspect=$6; exp_run=$7
    log=$(mktemp); why=""
    f="$dir/$name"
    ( ulimit -v "$mem_kb"; exec timeout "$limit_s" "$nib" inspect "$f" ) >/dev/null 2>"$log"; rc=$?
    w=$(check "$exp_inspect" $rc "$log"); [ -n "$w" ] && why="$why [inspect] $w"
    ( ulimit -v "$mem_kb"; exec timeout "$limit_s" "$nib" run "$f" $RUN_ARGS ) >/dev/null 2>"$log"; rc=$?
    w=$(check "$exp_run" $rc "$log"); [ -n "$w" ] && why="$why [run] $w"
    if [ "$nib_san" != - ]; then
        timeout "$limit_s" "$nib_san" inspect "$f" >/dev/null 2>"$log"; rc=$?
        w=$(check "$exp_inspect" $rc "$log"); [ -n "$w" ] && why="$why [inspect, sanitizers] $w"
        timeout "$limit_s" "$nib_san" run "$f" $RUN_ARGS >/dev/null 2>"$log"; rc=$?
        w=$(check "$exp_run" $rc "$log"); [ -n "$w" ] && why="$why [run, sanitizers] $w"
    fi
    rm -f "$log"
    if [ -z "$why" ]; then echo "ok    $name"; else echo "FAIL  $name:$why"; fi
    exit 0
fi

pass=0; fail=0; skip=0
ok()   { pass=$((pass + 1)); echo "ok    $1"; }
bad()  { fail=$((fail + 1)); echo "FAIL  $1"; }
skp()  { skip=$((skip + 1)); echo "skip  $1"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
[ "$nib_san" = - ] && skp "sanitizer runs: no sanitizer build of the CLI (clang with -fsanitize=address,undefined not available)"

# ---- the malformed-file corpus --------------------------------------------------------------
corpus=$tmp/corpus
if ! "$gen" corpus "$corpus" >/dev/null; then
    bad "gen_hostile could not write the corpus"
else
    t0=$(date +%s)
    # one line per file from the workers, two at a time (the machine's cores)
    tr '\t' '\n' < "$corpus/manifest.tsv" | tr '\n' '\0' |
        xargs -0 -n 3 -P "${HOSTILE_JOBS:-2}" sh "$0" --one "$nib" "$nib_san" "$corpus" > "$tmp/results"
    n_files=$(wc -l < "$corpus/manifest.tsv")
    n_ok=$(grep -c '^ok ' "$tmp/results")
    grep '^FAIL' "$tmp/results"
    pass=$((pass + n_ok)); fail=$((fail + n_files - n_ok))
    echo "corpus: $n_ok of $n_files files answered as expected in $(( $(date +%s) - t0 )) s"
fi
tiny=$corpus/m-valid-bpe.gguf

# ---- bad input at run time: options, prompts, memory ------------------------------------------
# expect_cli NAME EXPECT [ULIMIT_KB] -- ARGS...: the normal build must answer as EXPECT says
expect_cli() {
    name=$1; exp=$2; shift 2; kb=$mem_kb
    if [ "$1" != -- ]; then kb=$1; shift; fi
    shift
    ( ulimit -v "$kb"; exec timeout "$limit_s" "$nib" "$@" ) >"$tmp/out" 2>"$tmp/err" </dev/null; rc=$?
    w=$(check "$exp" $rc "$tmp/err")
    if [ -z "$w" ]; then ok "$name"; else bad "$name: $w"; fi
}

long_prompt=$(i=0; while [ $i -lt 40 ]; do printf 'the world and the hello '; i=$((i + 1)); done)
expect_cli "prompt longer than the context: both numbers" \
    "fail:the prompt is [0-9]+ tokens but the context holds 16" -- run "$tiny" -c 16 -p "$long_prompt"
expect_cli "--truncate keeps the prompt's end" "ok:truncated to its last 8" -- \
    run "$tiny" -c 16 -n 2 --temp 0 -p "$long_prompt" --truncate
expect_cli "generation reaching the end of the context stops with a message" \
    "ok:stopped: the context of 24 tokens is full" -- run "$tiny" -c 24 -n 1000 --temp 0 -p "hello world"
expect_cli "out of host memory: an error with the bytes needed" \
    "fail:out of host memory allocating the K cache: 2147483648 bytes needed" 1048576 -- \
    run "$tiny" -c 16777216 -p hello
expect_cli "missing model file" "fail:/nonexistent/model.gguf: cannot open" -- run /nonexistent/model.gguf -p hi
expect_cli "a directory as the model" "fail:not a regular file" -- run "$tmp" -p hi
: > "$tmp/empty.gguf"
expect_cli "an empty model file" "fail:truncated reading magic" -- run "$tmp/empty.gguf" -p hi
expect_cli "a device file as the model" "fail:not a regular file" -- run /dev/null -p hi
expect_cli "context_length 0 and no -c" "fail:context_length is 0: give a context size" -- \
    run "$corpus/m-context-length-0.gguf" -p hi
expect_cli "context_length 0 and -c 0" "fail:context_length is 0: give a context size" -- \
    run "$corpus/m-context-length-0.gguf" -c 0 -p hi
expect_cli "no -c: the model's context, at most 4096" "ok:, context 4096;" -- \
    run "$corpus/m-context-length-8192.gguf" -n 1 --temp 0 -p hi
expect_cli "-c 0 (llama.cpp's): all of the model's context" "ok:, context 8192;" -- \
    run "$corpus/m-context-length-8192.gguf" -c 0 -n 1 --temp 0 -p hi
expect_cli "-c 100" "ok:, context 100;" -- run "$corpus/m-context-length-8192.gguf" -c 100 -n 1 --temp 0 -p hi
expect_cli "no model given" "fail:no model file given" -- run -p hi
expect_cli "two models given" "fail:unexpected argument" -- run "$tiny" "$tiny" -p hi
expect_cli "the model as -m (llama.cpp's spelling)" "ok:nib: loading $tiny" -- run -m "$tiny" -n 2 --temp 0 -p hi
expect_cli "-m after a positional model" "fail:unexpected model '$tiny' \\(the model is already" -- run "$tiny" -m "$tiny" -p hi
expect_cli "a positional model after -m" "fail:unexpected argument" -- run -m "$tiny" "$tiny" -p hi
expect_cli "-ngl 0 (llama.cpp's spelling) runs on the CPU" "ok:nib: loading" -- run "$tiny" -ngl 0 -n 2 --temp 0 -p hi
expect_cli "-ngl 99: the GPU, or the CPU saying why" "ok:(no usable GPU \\(.+\\); running on the CPU|running on the GPU)" -- \
    run "$tiny" -ngl 99 -n 2 --temp 0 -p hi
expect_cli "-ngl and --device together" "fail:give -ngl or --device, not both" -- run "$tiny" -ngl 0 --device cpu -p hi
expect_cli "-ngl below -1" "fail:-ngl must be an integer in \\[-1, 1048576\\], got '-2'" -- run "$tiny" -ngl -2 -p hi
expect_cli "token count below -1" "fail:-n must be an integer in \[-1, " -- run "$tiny" -n -2 -p hi
expect_cli "token count not a number" "fail:-n must be an integer" -- run "$tiny" -n 12abc -p hi
expect_cli "token count past int32" "fail:-n must be an integer" -- run "$tiny" -n 99999999999999999999 -p hi
expect_cli "negative context" "fail:-c must be an integer in \[0, " -- run "$tiny" -c -5 -p hi
expect_cli "zero threads" "fail:-t must be an integer in \[1, " -- run "$tiny" -t 0 -p hi
expect_cli "negative batch" "fail:-b must be an integer in \[1, " -- run "$tiny" -b -1 -p hi
expect_cli "temperature below 0" "fail:--temp must be a number in \[0, 100\]" -- run "$tiny" --temp -0.5 -p hi
expect_cli "temperature above the range" "fail:--temp must be a number in \[0, 100\]" -- run "$tiny" --temp 1000 -p hi
expect_cli "temperature NaN" "fail:--temp must be a number" -- run "$tiny" --temp nan -p hi
expect_cli "top-p 0" "fail:--top-p must be a number" -- run "$tiny" --top-p 0 -p hi
expect_cli "min-p above 1" "fail:--min-p must be a number" -- run "$tiny" --min-p 1.5 -p hi
expect_cli "negative top-k" "fail:--top-k must be an integer" -- run "$tiny" --top-k -3 -p hi
expect_cli "negative seed" "fail:--seed needs a non-negative integer" -- run "$tiny" --seed -2 -p hi
expect_cli "seed -1 (llama.cpp's random seed)" "ok:nib: sampling with seed [0-9]+" -- run "$tiny" --seed -1 -n 2 -p hi
# the default seed: new for each run, even two in the same second (it was the
# time in seconds), and said, so that --seed repeats the run
seed_of() { "$nib" run "$tiny" -n 8 -p hi 2>&1 >/dev/null | sed -n 's/^nib: sampling with seed //p'; }
s1=$(seed_of); s2=$(seed_of)
if [ -n "$s1" ] && [ -n "$s2" ] && [ "$s1" != "$s2" ]; then ok "default seeds differ between runs ($s1, $s2)"
else bad "default seeds of two runs: '$s1' and '$s2'"; fi
o1=$("$nib" run "$tiny" -n 16 -p hi --seed "$s1" 2>/dev/null); o2=$("$nib" run "$tiny" -n 16 -p hi --seed "$s1" 2>/dev/null)
if [ -n "$o1" ] && [ "$o1" = "$o2" ]; then ok "--seed with the printed seed repeats the text"
else bad "--seed $s1 twice: '$o1' and '$o2'"; fi
expect_cli "unknown device" "fail:unknown device 'tpu'" -- run "$tiny" --device tpu -p hi
expect_cli "unknown option" "fail:unknown option '--frobnicate'" -- run "$tiny" --frobnicate -p hi
expect_cli "option without its value" "fail:option '-n' needs a value" -- run "$tiny" -p hi -n
expect_cli "empty stop string" "fail:non-empty --stop" -- run "$tiny" -p hi --stop ""
expect_cli "prompt file missing" "fail:cannot open prompt file '/nonexistent/prompt.txt'" -- \
    run "$tiny" -f /nonexistent/prompt.txt
expect_cli "prompt file is a directory" "fail:prompt file '$tmp' is a directory" -- run "$tiny" -f "$tmp"
expect_cli "both -p and -f" "fail:not both" -- run "$tiny" -p hi -f /dev/null
expect_cli "bench: zero repetitions" "fail:-r must be an integer in \[1, " -- bench "$tiny" -r 0
expect_cli "bench: an empty item in a list" "fail:-p takes integers in \[0, 1048576\], one or up to 16 separated by commas; got '8,,16'" -- \
    bench "$tiny" -p 8,,16
expect_cli "bench: a negative depth in a list" "fail:-d takes integers in \[0, " -- bench "$tiny" -d 0,-5
expect_cli "bench: a list of 17" "fail:up to 16 separated by commas" -- bench "$tiny" -n 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17
expect_cli "tokenize: missing model" "fail:cannot open" -- tokenize /nonexistent.gguf -p hi
printf '{%% for m in messages %%}{{ m.content ' > "$tmp/bad.jinja"
printf 'hello\n' > "$tmp/chat_in"
( ulimit -v "$mem_kb"; exec timeout "$limit_s" "$nib" chat "$tiny" --chat-template "$tmp/bad.jinja" -n 2 ) \
    <"$tmp/chat_in" >/dev/null 2>"$tmp/err"; rc=$?
w=$(check "fail:chat template: unclosed .* at 1:24" $rc "$tmp/err"); [ -z "$w" ] && ok "chat: a broken template file" || bad "chat: a broken template file: $w"
( ulimit -v "$mem_kb"; exec timeout "$limit_s" "$nib" chat "$tiny" --chat-template "$tmp" -n 2 ) \
    <"$tmp/chat_in" >/dev/null 2>"$tmp/err"; rc=$?
w=$(check "fail:--chat-template '$tmp'" $rc "$tmp/err"); [ -z "$w" ] && ok "chat: a directory as the template" || bad "chat: a directory as the template: $w"
( ulimit -v "$mem_kb"; exec timeout "$limit_s" "$nib" chat "$corpus/m-odd-bad-chat-template.gguf" -n 2 ) \
    <"$tmp/chat_in" >/dev/null 2>"$tmp/err"; rc=$?
w=$(check "fail:chat template:" $rc "$tmp/err"); [ -z "$w" ] && ok "chat: the model's own template is broken" || bad "chat: the model's own template is broken: $w"
# a conversation past the context: the oldest exchanges left out, said; a message that cannot fit: said, the chat goes on
printf 'hello world\nthe hello world\nhello the world\nworld hello\nthe world\n' > "$tmp/chat_long"
( ulimit -v "$mem_kb"; exec timeout "$limit_s" "$nib" chat "$tiny" --chat-template chatml -c 48 -n 8 --temp 0 ) \
    <"$tmp/chat_long" >"$tmp/out" 2>"$tmp/err"; rc=$?
w=$(check "ok:oldest exchanges? left out to fit the context of 48" $rc "$tmp/err")
n_replies=$(grep -c '' "$tmp/out")
[ -z "$w" ] && [ "$n_replies" -ge 5 ] && ok "chat past the context: the oldest exchanges left out, five replies" \
    || bad "chat past the context ($n_replies reply lines): $w $(tail -3 "$tmp/err")"
printf '%s\nhello\n' "$long_prompt" > "$tmp/chat_huge"
( ulimit -v "$mem_kb"; exec timeout "$limit_s" "$nib" chat "$tiny" --chat-template chatml -c 48 -n 8 --temp 0 ) \
    <"$tmp/chat_huge" >"$tmp/out" 2>"$tmp/err"; rc=$?
w=$(check "ok:the message \\([0-9]+ tokens with the template\\) does not fit the context of 48 with room for a reply of 8" $rc "$tmp/err")
[ -z "$w" ] && [ "$(grep -c '' "$tmp/out")" -ge 1 ] && ok "chat: a message longer than the context is refused, the next answered" \
    || bad "chat: a message longer than the context: $w"

# inspect prints what the file holds, escaped, and the value of the right key
"$nib" inspect "$corpus/m-odd-keys.gguf" >"$tmp/out" 2>&1
if grep -q "$(printf '\033')" "$tmp/out"; then bad "inspect: a key's escape sequence reached the terminal"
else ok "inspect: escape sequences in keys and values are escaped"; fi
grep -q 'odd\.long\.k.*"the value of a 300-byte key"' "$tmp/out" && ok "inspect: a 300-byte key shows its own value" \
    || bad "inspect: a 300-byte key shows another value: $(grep 'odd.long' "$tmp/out" | cut -c 160-)"
"$nib" inspect "$corpus/r-key-with-nul" >"$tmp/out" 2>&1
grep -q 'general\\x00name .*"nib tiny test model"' "$tmp/out" && ok "inspect: a key holding a NUL shows its own value" \
    || bad "inspect: a key holding a NUL: $(grep -a 'general' "$tmp/out" | tail -n 1)"

# ---- whole runs under ASan, UBSan and LeakSanitizer -------------------------------------------
# san_run NAME STDIN ARGS...: exit 0 and no sanitizer report ($san_env: VAR=VALUE for nib)
san_env=""
san_run() {
    name=$1; input=$2; shift 2
    # shellcheck disable=SC2086
    env $san_env timeout 300 "$nib_san" "$@" <"$input" >"$tmp/out" 2>"$tmp/err"; rc=$?
    w=$(check ok $rc "$tmp/err")
    if [ -z "$w" ]; then ok "sanitizers: $name"; else bad "sanitizers: $name: $w"; fi
}
if [ "$nib_san" != - ]; then
    n=8; [ "$mode" = long ] && n=64
    printf 'hello\n/reset\nthe world\n\n' > "$tmp/chat_in"
    san_run "tiny model, run -n $n" /dev/null run "$tiny" -p "hello world" -n $n --temp 0.8 --seed 7
    san_run "tiny model, chat" "$tmp/chat_in" chat "$tiny" -n 6 --seed 3
    san_run "tiny SentencePiece model, run" /dev/null run "$corpus/m-valid-spm.gguf" -p "the hello" -n $n --temp 0
    san_run "tiny model, bench" /dev/null bench "$tiny" -p 8 -n 4 -r 1
    # the experts' gather and scatter, batches of 5 tokens (tokens choosing, and not choosing, each expert)
    for moe in tiny-qwen3moe tiny-mixtral tiny-olmoe tiny-gpt-oss; do
        "$nib" synth --shape $moe --type Q4_0 -o "$tmp/$moe.gguf" >/dev/null 2>&1
        san_run "mixture of experts ($moe), run in batches of 5" /dev/null run "$tmp/$moe.gguf" \
            -p "a prompt of a few more tokens than one batch" -n 6 -b 5 --temp 0.8 --seed 5 --device cpu
    done
    # NaN and denormal activations through the scalar reference kernels (once an
    # undefined float-to-int cast: NaN, and inf from 1/d of a denormal block)
    san_env=NIB_SIMD=scalar
    san_run "NaN weights on the scalar kernels" /dev/null run "$corpus/m-odd-nan-norm.gguf" -p hi -n 4 -t 1
    san_run "denormal activations on the scalar kernels" /dev/null run "$corpus/m-odd-denormal-norm.gguf" -p hi -n 4 -t 1
    san_env=""
    san_run "tokens longer than any fixed buffer" /dev/null run "$corpus/m-odd-long-tokens.gguf" -p hi -n 8 -t 1
    san_run "tiny model, tokenize --pieces" /dev/null tokenize "$tiny" -p "hello <|im_end|> w\303\266rld" --pieces
    smol=$models/SmolLM2-135M-Instruct.Q4_1.gguf
    gemma=$models/gemma-3-270m-q4_k_m.gguf
    if [ -f "$smol" ]; then
        san_run "SmolLM2, run -n $n" /dev/null run "$smol" -p "The capital of France is" -n $n --temp 0
        [ "$mode" = long ] && san_run "SmolLM2, chat" "$tmp/chat_in" chat "$smol" -n 16 --temp 0
    else
        skp "sanitizers: SmolLM2 (not in $models; make models fetches it)"
    fi
    if [ "$mode" = long ]; then
        if [ -f "$gemma" ]; then
            san_run "Gemma 3, run -n 32" /dev/null run "$gemma" -p "The capital of France is" -n 32 --temp 0
            san_run "Gemma 3, chat" "$tmp/chat_in" chat "$gemma" -n 16 --temp 0
        else
            skp "sanitizers: Gemma 3 (not in $models)"
        fi
    fi
fi

# ---- C unit tests built with the sanitizers ($HOSTILE_SAN_TESTS) -----------------------------
for t in ${HOSTILE_SAN_TESTS:-}; do
    [ "$nib_san" = - ] && break
    if [ ! -x "$t" ]; then bad "sanitizers: $t was not built"; continue; fi
    timeout 600 "$t" >"$tmp/out" 2>&1; rc=$?
    w=$(check ok $rc "$tmp/out")
    if [ -z "$w" ]; then ok "sanitizers: $(basename "$t") ($(tail -n 1 "$tmp/out"))"
    else bad "sanitizers: $(basename "$t"): $w"; grep -E '^FAIL|  FAIL' "$tmp/out" | head -n 5; fi
done

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
