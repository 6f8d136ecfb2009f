#!/bin/sh
# CLI checks: `nib inspect --types` lists all 27 formats, `nib inspect` reads a
# file the writer made, and bad invocations fail with a message.
nib=${1:-build/nib}
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "ok    $1"; }
bad() { fail=$((fail + 1)); echo "FAIL  $1"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

out=$("$nib" inspect --types)
n=$(echo "$out" | grep -cE '^[0-9]+ +[A-Z0-9_]+ +[0-9]+ +[0-9]+ ')
[ "$n" = 27 ] && ok "inspect --types lists 27 formats" || bad "inspect --types lists $n formats, expected 27"
# the packed CPU layouts (listed whatever this CPU has)
echo "$out" | grep -E "^12 +Q4_K " | grep -q "8-row packed: avx2, avx512-vnni" &&
    ok "inspect --types names Q4_K's packed layouts" || bad "inspect --types: Q4_K's packed layouts missing"
echo "$out" | grep -E "^14 +Q6_K " | grep -q "avx512-vnni prompts" &&
    ok "inspect --types says Q6_K is packed for prompts" || bad "inspect --types: Q6_K's prompt-only layout missing"
echo "$out" | grep -E "^16 +IQ2_XXS " | grep -q "prompts decoded ahead: avx2, avx512-vnni" &&
    ok "inspect --types says IQ2_XXS's prompts are decoded ahead" || bad "inspect --types: IQ2_XXS's decoded prompts missing"
for t in F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1 Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K IQ2_XXS IQ2_XS IQ2_S \
         IQ3_XXS IQ3_S IQ1_S IQ1_M IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4; do
    echo "$out" | grep -qE "^[0-9]+ +$t " || { bad "inspect --types lacks $t"; continue; }
done
echo "$out" | grep -E '^12 +Q4_K +256 +144 +4.5 ' >/dev/null && ok "Q4_K row: 256 elems, 144 bytes, 4.5 bits" \
    || bad "Q4_K row wrong: $(echo "$out" | grep Q4_K)"
echo "$out" | grep -E '^16 +IQ2_XXS .* no ' >/dev/null && ok "IQ2_XXS shows no quantizer" || bad "IQ2_XXS quantizer column"

# a real file, written by the library's writer through the test helper
if "$nib" inspect /nonexistent.gguf 2>"$tmp/err"; then bad "missing file exits 0"
else grep -q "cannot open" "$tmp/err" && ok "missing file: clear error" || bad "missing file message: $(cat "$tmp/err")"; fi
printf 'GGUF\003\000\000\000' > "$tmp/short.gguf"
if "$nib" inspect "$tmp/short.gguf" 2>"$tmp/err"; then bad "truncated file exits 0"
else grep -q "at byte 8" "$tmp/err" && ok "truncated file: error with offset" || bad "truncated message: $(cat "$tmp/err")"; fi
if "$nib" inspect "$tmp" 2>"$tmp/err"; then bad "directory exits 0"
else grep -q "not a regular file" "$tmp/err" && ok "directory: clear error" || bad "directory message: $(cat "$tmp/err")"; fi
if "$nib" frobnicate 2>/dev/null; then bad "unknown command exits 0"; else ok "unknown command fails"; fi
if "$nib" inspect 2>/dev/null; then bad "inspect without a file exits 0"; else ok "inspect without a file fails"; fi


# ---- nib synth: random models of real shapes ---------------------------------------------
# tiny-llama (2 layers, untied) in every type; the file's formats follow llama.cpp's mix:
# Q4_K_M and Q5_K_M put attn_v/ffn_down in Q6_K on layers where use_more_bits(i, 2) holds
# (layer 1, not 0) and the LM head in Q6_K; Q4_0, Q4_1, Q5_0, Q5_1 have a Q6_K head too;
# Q6_K, Q8_0 and F16 are uniform. Q3_K_M: attn_v in Q5_K on the first two layers, ffn_down
# in Q5_K on the first 16th (none of 2) else Q4_K, attn_output Q4_K; Q2_K: attn_v in Q3_K
# (4 heads on 2 KV heads: a group under 4), ffn_down and attn_output in Q3_K.
# The IQ and ternary types: the base format everywhere, the LM head in Q6_K.
tensor_type() { echo "$2" | awk -v n="$1" '$2 == n { print $3 }'; }
for t in F16 Q8_0 Q4_0 Q4_K_M Q4_1 Q5_0 Q5_1 Q5_K_M Q6_K Q3_K_M Q2_K IQ4_XS IQ4_NL IQ2_XXS TQ1_0; do
    f="$tmp/synth-$t.gguf"
    if ! "$nib" synth --shape tiny-llama --type "$t" --seed 7 -o "$f" >"$tmp/out" 2>&1; then
        bad "synth tiny-llama $t: $(cat "$tmp/out")"; continue
    fi
    grep -q "self-check: .* rows finite" "$tmp/out" && ok "synth tiny-llama $t writes and self-checks" \
        || bad "synth $t output: $(cat "$tmp/out")"
    ins=$("$nib" inspect "$f")
    case $t in F16) want="1 F16 F16 F16 F16 F16 F16";; Q8_0) want="7 Q8_0 Q8_0 Q8_0 Q8_0 Q8_0 Q8_0";;
                Q4_0) want="2 Q4_0 Q4_0 Q4_0 Q4_0 Q4_0 Q6_K";; Q4_K_M) want="15 Q4_K Q4_K Q6_K Q4_K Q6_K Q6_K";;
                Q4_1) want="3 Q4_1 Q4_1 Q4_1 Q4_1 Q4_1 Q6_K";; Q5_0) want="8 Q5_0 Q5_0 Q5_0 Q5_0 Q5_0 Q6_K";;
                Q5_1) want="9 Q5_1 Q5_1 Q5_1 Q5_1 Q5_1 Q6_K";; Q5_K_M) want="17 Q5_K Q5_K Q6_K Q5_K Q6_K Q6_K";;
                Q6_K) want="18 Q6_K Q6_K Q6_K Q6_K Q6_K Q6_K";;
                Q3_K_M) want="12 Q3_K Q5_K Q5_K Q4_K Q4_K Q6_K Q4_K";;
                Q2_K) want="10 Q2_K Q3_K Q3_K Q3_K Q3_K Q6_K Q3_K";;
                IQ4_XS) want="30 IQ4_XS IQ4_XS IQ4_XS IQ4_XS IQ4_XS Q6_K";;
                IQ4_NL) want="25 IQ4_NL IQ4_NL IQ4_NL IQ4_NL IQ4_NL Q6_K";;
                IQ2_XXS) want="19 IQ2_XXS IQ2_XXS IQ2_XXS IQ2_XXS IQ2_XXS Q6_K";;
                TQ1_0) want="36 TQ1_0 TQ1_0 TQ1_0 TQ1_0 TQ1_0 Q6_K";; esac
    got="$(echo "$ins" | awk '$1 == "general.file_type" { print $3 }')"
    for n in token_embd.weight blk.0.attn_v.weight blk.1.attn_v.weight blk.0.ffn_down.weight \
             blk.1.ffn_down.weight output.weight; do got="$got $(tensor_type $n "$ins")"; done
    case $t in Q3_K_M|Q2_K) got="$got $(tensor_type blk.1.attn_output.weight "$ins")";; esac
    [ "$got" = "$want" ] && ok "synth $t: file_type and types of embd, attn_v 0/1, ffn_down 0/1, output" \
        || bad "synth $t: file_type/types '$got', expected '$want'"
    nt=$(echo "$ins" | grep -cE '^ +[0-9]+  blk\.|^ +[0-9]+  (token_embd|output)')
    [ "$(tensor_type blk.1.attn_norm.weight "$ins")" = F32 ] && [ "$nt" = 21 ] \
        && ok "synth $t: 21 tensors, norms F32" || bad "synth $t: $nt tensors, norm $(tensor_type blk.1.attn_norm.weight "$ins")"
    if "$nib" run "$f" -p "hello" -n 4 --temp 0 >"$tmp/gen" 2>"$tmp/err" && grep -q "generated 4 tokens" "$tmp/err"; then
        ok "nib run on synth $t generates 4 tokens"
    else bad "nib run on synth $t: $(tail -2 "$tmp/err")"; fi
done
# qwen2 with QKV biases, tied embeddings and 192-wide rows: llama.cpp's fallbacks
# (Q4_K -> Q5_0, Q6_K -> Q8_0; the tied head Q8_0)
if "$nib" synth --shape tiny-qwen2 --type Q4_K_M -o "$tmp/q2.gguf" >"$tmp/out" 2>&1; then
    ins=$("$nib" inspect "$tmp/q2.gguf")
    got="$(tensor_type token_embd.weight "$ins") $(tensor_type blk.0.attn_q.weight "$ins") \
$(tensor_type blk.1.attn_v.weight "$ins") $(tensor_type blk.1.ffn_down.weight "$ins") $(tensor_type blk.0.attn_q.bias "$ins")"
    [ "$got" = "Q8_0 Q5_0 Q8_0 Q6_K F32" ] && ! echo "$ins" | grep -q " output.weight " \
        && ok "synth tiny-qwen2 Q4_K_M: fallback types, biases, tied head" || bad "synth tiny-qwen2 types: $got"
    "$nib" run "$tmp/q2.gguf" -p "hello" -n 4 --temp 0 >/dev/null 2>"$tmp/err" && grep -q "generated 4 tokens" "$tmp/err" \
        && ok "nib run on synth tiny-qwen2 generates 4 tokens" || bad "nib run on tiny-qwen2: $(tail -2 "$tmp/err")"
else bad "synth tiny-qwen2: $(cat "$tmp/out")"; fi
# Q3_K_M on 192-wide rows: Q3_K falls back to IQ4_NL, Q5_K (attn_v) to Q5_1, as llama.cpp's do
if "$nib" synth --shape tiny-qwen2 --type Q3_K_M -o "$tmp/q3.gguf" >"$tmp/out" 2>&1; then
    ins=$("$nib" inspect "$tmp/q3.gguf")
    got="$(tensor_type blk.0.attn_q.weight "$ins") $(tensor_type blk.0.attn_v.weight "$ins")"
    [ "$got" = "IQ4_NL Q5_1" ] && ok "synth tiny-qwen2 Q3_K_M: IQ4_NL and Q5_1 fallbacks" \
        || bad "synth tiny-qwen2 Q3_K_M types: $got"
    "$nib" run "$tmp/q3.gguf" -p "hello" -n 4 --temp 0 >/dev/null 2>"$tmp/err" && grep -q "generated 4 tokens" "$tmp/err" \
        && ok "nib run on synth tiny-qwen2 Q3_K_M generates 4 tokens" || bad "nib run on tiny-qwen2 Q3_K_M: $(tail -2 "$tmp/err")"
else bad "synth tiny-qwen2 Q3_K_M: $(cat "$tmp/out")"; fi
# gemma3: QK-norms and the norms after attention and FFN, the sliding window key, 128-wide
# rows (Q5_0/Q8_0 fallbacks as in the real Gemma 3 270M Q4_K_M file; V gets more bits in
# layers 2, 5 and 6 of 7), tied head; 7 layers: local ones and the global 6th
if "$nib" synth --shape tiny-gemma3 --type Q4_K_M -o "$tmp/g3.gguf" >"$tmp/out" 2>&1; then
    ins=$("$nib" inspect "$tmp/g3.gguf")
    got="$(tensor_type token_embd.weight "$ins") $(tensor_type blk.0.attn_q.weight "$ins") \
$(tensor_type blk.0.attn_v.weight "$ins") $(tensor_type blk.2.attn_v.weight "$ins") \
$(tensor_type blk.2.ffn_down.weight "$ins") $(tensor_type blk.3.attn_q_norm.weight "$ins") \
$(tensor_type blk.6.post_ffw_norm.weight "$ins") $(tensor_type blk.6.post_attention_norm.weight "$ins")"
    nt=$(echo "$ins" | grep -cE '^ +[0-9]+  blk\.|^ +[0-9]+  (token_embd|output)')
    win=$(echo "$ins" | awk '$1 == "gemma3.attention.sliding_window" { print $3 }')
    [ "$got" = "Q8_0 Q5_0 Q5_0 Q8_0 Q6_K F32 F32 F32" ] && [ "$nt" = 93 ] && [ "$win" = 16 ] \
        && ok "synth tiny-gemma3 Q4_K_M: 93 tensors, gemma3 norms, window 16, fallback types" \
        || bad "synth tiny-gemma3: types '$got', $nt tensors, window '$win'"
    "$nib" run "$tmp/g3.gguf" -p "hello" -n 4 --temp 0 >/dev/null 2>"$tmp/err" && grep -q "generated 4 tokens" "$tmp/err" \
        && ok "nib run on synth tiny-gemma3 generates 4 tokens" || bad "nib run on tiny-gemma3: $(tail -2 "$tmp/err")"
else bad "synth tiny-gemma3: $(cat "$tmp/out")"; fi
# determinism: the bytes are a function of (shape, type, seed), whatever the thread count
"$nib" synth --shape tiny-llama --type Q4_K_M --seed 7 -t 1 -o "$tmp/again.gguf" >/dev/null 2>&1
cmp -s "$tmp/synth-Q4_K_M.gguf" "$tmp/again.gguf" && ok "synth: same seed, 1 vs all threads: identical bytes" \
    || bad "synth: same seed gave different files"
"$nib" synth --shape tiny-llama --type Q4_K_M --seed 8 -o "$tmp/other.gguf" >/dev/null 2>&1
[ -s "$tmp/other.gguf" ] && ! cmp -s "$tmp/synth-Q4_K_M.gguf" "$tmp/other.gguf" && ok "synth: another seed, other bytes" \
    || bad "synth: seeds 7 and 8 gave the same file"
# errors name the problem and the valid choices
if "$nib" synth --shape llama9 --type Q4_0 -o "$tmp/x.gguf" 2>"$tmp/err"; then bad "synth: unknown shape exits 0"
else grep -q "unknown shape 'llama9'.*tiny-llama.*llama3-8b" "$tmp/err" && ok "synth: unknown shape lists the shapes" \
    || bad "synth unknown shape message: $(cat "$tmp/err")"; fi
if "$nib" synth --shape tiny-llama --type Q3_K -o "$tmp/x.gguf" 2>"$tmp/err"; then bad "synth: unknown type exits 0"
else grep -q "unknown type 'Q3_K'.*Q4_K_M" "$tmp/err" && ok "synth: unknown type lists the types" \
    || bad "synth unknown type message: $(cat "$tmp/err")"; fi
if "$nib" synth --shape tiny-llama --type Q8_0 -o "$tmp/no/such/dir.gguf" 2>"$tmp/err"; then bad "synth: bad path exits 0"
else grep -q "no/such/dir.gguf: cannot create" "$tmp/err" && ok "synth: unwritable output: clear error" \
    || bad "synth bad path message: $(cat "$tmp/err")"; fi
if "$nib" synth --shape tiny-llama --type Q8_0 2>/dev/null; then bad "synth without -o exits 0"; else ok "synth without -o fails"; fi
out=$("$nib" synth --list)
echo "$out" | grep -qE '^  llama3-8b +.* 4912898048 \(4\.91\)' && ok "synth --list: llama3-8b Q4_K_M is 4.91 GB of tensors" \
    || bad "synth --list: $(echo "$out" | grep llama3-8b)"
# llama.cpp's own files of Llama-3-8B: Q5_K_M 5.73 GB, Q6_K 6.59 GB of tensor data
echo "$out" | grep -qE '^  llama3-8b +.* 5725151232 \(5\.73\) +6588170240 \(6\.59\)' \
    && ok "synth --list: llama3-8b Q5_K_M 5.73 GB, Q6_K 6.59 GB" || bad "synth --list Q5_K_M/Q6_K: $(echo "$out" | grep llama3-8b)"

# ---- the GPU options on any machine ---------------------------------------------------------
# bench builds a synth model in memory and measures it on the CPU with --device cpu; without a
# usable GPU, --device cuda and nib verify fail naming why, and the default (auto) runs on the CPU.
f="$tmp/synth-Q4_0.gguf"
if "$nib" bench synth:tiny-llama:Q4_0 -p 16 -n 8 -r 2 -t 1 --device cpu >"$tmp/out" 2>"$tmp/err"; then
    grep -qE '^\| synth:tiny-llama:Q4_0 \| cpu .* \| tg8 \| [0-9.]+' "$tmp/out" && grep -q "roofline" "$tmp/out" \
        && ok "bench synth:tiny-llama:Q4_0 on the CPU: speeds and roofline" || bad "bench synth output: $(cat "$tmp/out")"
else bad "bench synth:tiny-llama:Q4_0 failed: $(tail -2 "$tmp/err")"; fi
grep -q "training context" "$tmp/err" && bad "bench within the training context warns: $(cat "$tmp/err")" \
    || ok "bench within the training context: no context warning"
# a context past the model's training context (tiny-llama: 2048) runs, as in llama.cpp, with a warning
if "$nib" bench synth:tiny-llama:Q4_0 -p 0 -n 8 -r 1 -d 2045 -t 1 --device cpu >"$tmp/out" 2>"$tmp/err"; then
    grep -q "a context of 2054 positions is longer than the model's training context (2048)" "$tmp/err" \
        && ok "bench -d past the training context: warns and runs" || bad "context warning: $(cat "$tmp/err")"
else bad "bench -d 2045 failed: $(tail -2 "$tmp/err")"; fi
# comma lists, as llama-bench: each prompt size and each generation length a test at each depth
if "$nib" bench synth:tiny-llama:Q4_0 -p 8,16 -n 4,0 -d 0,32 -r 1 -t 1 --device cpu >"$tmp/out" 2>"$tmp/err"; then
    rows=$(grep -cE '^\| synth:tiny-llama:Q4_0 \| cpu .* \| (pp8|pp16|tg4)( @ d32)? \| [0-9.]+' "$tmp/out")
    [ "$rows" = 6 ] && grep -q '| pp16 @ d32 |' "$tmp/out" && grep -q "^decode roofline of tg4 @ d32: " "$tmp/out" \
        && ok "bench -p 8,16 -n 4,0 -d 0,32: six tests, a roofline for each generation" \
        || bad "bench lists ($rows rows): $(cat "$tmp/out")"
else bad "bench with lists failed: $(tail -2 "$tmp/err")"; fi
if "$nib" bench synth:tiny-llama:Q4_0 -p 8 -n 2,4 -r 1 -t 1 --device cpu --json >"$tmp/out" 2>"$tmp/err" &&
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(not (isinstance(j, list) and [(x['pp'], x['tg']) for x in j] == [(8, 0), (0, 2), (0, 4)] and all(x['tg_tps'] > 0 for x in j[1:])))" "$tmp/out"; then
    ok "bench --json with lists: an array, one object a test"
else bad "bench --json lists: $(cat "$tmp/out" "$tmp/err" | tail -5)"; fi
# two repetitions: a prompt-only test after a generation compares no tokens (it once compared
# the generation's leftovers and called the run non-deterministic)
if "$nib" bench synth:tiny-llama:Q4_0 -p 0,8 -n 4 -d 0,16 -r 2 -t 1 --device cpu >"$tmp/out" 2>"$tmp/err"; then
    grep -q "differ between repetitions" "$tmp/err" && bad "bench lists -r 2: a warning: $(cat "$tmp/err")" \
        || ok "bench lists with -r 2: exit 0, no determinism warning"
else bad "bench lists with -r 2 failed: $(tail -2 "$tmp/err")"; fi
if "$nib" bench synth:tiny-llama:Q4_0 -p 0 -n 0 -r 1 -t 1 --device cpu >/dev/null 2>"$tmp/err"; then bad "bench -p 0 -n 0 exits 0"
else grep -q "nothing to time" "$tmp/err" && ok "bench -p 0 -n 0: nothing to time" || bad "bench -p 0 -n 0: $(cat "$tmp/err")"; fi
if "$nib" bench synth:nope:Q4_0 -p 1 -n 1 -r 1 2>"$tmp/err"; then bad "bench synth with a bad shape exits 0"
else grep -q "synth:SHAPE:TYPE" "$tmp/err" && ok "bench synth: bad spec names the form" || bad "bench bad synth: $(cat "$tmp/err")"; fi
if "$nib" info | grep -q "^cuda: unavailable"; then
    if "$nib" run "$f" -p hello -n 2 --device cuda >/dev/null 2>"$tmp/err"; then bad "run --device cuda without a GPU exits 0"
    else grep -q "no usable CUDA device" "$tmp/err" && ok "run --device cuda without a GPU: clear error" \
        || bad "run --device cuda message: $(cat "$tmp/err")"; fi
    if "$nib" verify "$f" -n 2 >/dev/null 2>"$tmp/err"; then bad "verify without a GPU exits 0"
    else grep -q "GPU context: no usable CUDA device" "$tmp/err" && ok "verify without a GPU: clear error" \
        || bad "verify message: $(cat "$tmp/err")"; fi
    "$nib" run "$f" -p hello -n 2 >/dev/null 2>"$tmp/err" && ! grep -q "running on the GPU" "$tmp/err" \
        && ok "run (auto device) without a GPU runs on the CPU" || bad "run auto device: $(cat "$tmp/err")"
else
    echo "skip  GPU-absent checks: this machine has a usable GPU"
fi

# --ignore-eos (llama.cpp's): SmolLM2 answers "2+2" in a few tokens and ends its turn; with the
# end-of-generation tokens masked it runs to -n, the same text first
smol=${NIB_MODELS:-models}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -f "$smol" ]; then
    p=$(printf '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n')
    "$nib" run "$smol" -p "$p" -n 40 --temp 0 -t 1 >"$tmp/a" 2>"$tmp/ea"
    "$nib" run "$smol" -p "$p" -n 40 --temp 0 -t 1 --ignore-eos >"$tmp/b" 2>"$tmp/eb"
    na=$(sed -n 's/.*generated \([0-9]*\) tokens.*/\1/p' "$tmp/ea"); nb=$(sed -n 's/.*generated \([0-9]*\) tokens.*/\1/p' "$tmp/eb")
    same_start=no; ta=$(cat "$tmp/a"); tb=$(cat "$tmp/b")
    case $tb in "$ta"?*) same_start=yes;; esac
    [ -n "$na" ] && [ "$na" -lt 40 ] && [ "$nb" = 40 ] && [ $same_start = yes ] \
        && ok "--ignore-eos: $na tokens and the end of the turn without it, 40 with it, the same text first" \
        || bad "--ignore-eos: $na and $nb tokens: '$(cat "$tmp/a")' / '$(cat "$tmp/b")'"
else
    echo "skip  --ignore-eos: $smol is not here (make models)"
fi

# -p's escapes, as llama.cpp reads them (-e, the default): the echoed prompt holds the bytes;
# --no-escape keeps the backslashes; \x00 is an error, not a shorter prompt
if [ -f "$smol" ]; then
    "$nib" run "$smol" -p 'one\ntwo\tthree \x41\q \\n' -n 0 --echo -t 1 >"$tmp/a" 2>/dev/null
    printf 'one\ntwo\tthree A\\q \\n\n' >"$tmp/want"
    "$nib" run "$smol" -p 'one\ntwo' -n 0 --echo -t 1 --no-escape >"$tmp/b" 2>/dev/null
    printf 'one\\ntwo\n' >"$tmp/want_b"
    cmp -s "$tmp/a" "$tmp/want" && cmp -s "$tmp/b" "$tmp/want_b" \
        && ok "-p reads backslash escapes as llama.cpp (newline, tab, hex byte, backslash; an unknown one stays); --no-escape keeps them" \
        || bad "escapes: $(od -c "$tmp/a" | head -2 | tr '\\' '/') / $(od -c "$tmp/b" | head -1 | tr '\\' '/')"
else
    echo "skip  -p escapes: $smol is not here (make models)"
fi
if "$nib" run "$tmp/synth-Q8_0.gguf" -p 'a\x00b' -n 1 2>"$tmp/err"; then bad "-p with a NUL byte escape exits 0"
else grep -q 'holds \\x00, a NUL byte' "$tmp/err" && ok "-p with a NUL byte escape: clear error" || bad "NUL escape message: $(cat "$tmp/err" | tr '\\' '/')"; fi
# -n -1 (llama.cpp's "no limit"): generation runs to the end of the context and says so
if "$nib" run "$tmp/synth-Q8_0.gguf" -p hello -n -1 -c 24 --ignore-eos --temp 0 -t 1 >/dev/null 2>"$tmp/err"; then
    g=$(sed -n 's/.*generated \([0-9]*\) tokens.*/\1/p' "$tmp/err")
    grep -q "the context of 24 tokens is full" "$tmp/err" && [ "${g:-0}" -gt 10 ] \
        && ok "-n -1 generates to the end of the context ($g tokens)" || bad "-n -1: $(cat "$tmp/err")"
else bad "-n -1 failed: $(tail -2 "$tmp/err")"; fi
if "$nib" run "$tmp/synth-Q8_0.gguf" -p hello -n -2 2>"$tmp/err"; then bad "-n -2 exits 0"
else grep -q -- "-n must be an integer in \[-1, " "$tmp/err" && ok "-n -2: range error" || bad "-n -2 message: $(cat "$tmp/err")"; fi
if "$nib" verify "$tmp/synth-Q8_0.gguf" -n -1 2>"$tmp/err"; then bad "verify -n -1 exits 0"
else grep -q "no end to compare" "$tmp/err" && ok "verify -n -1: clear error" || bad "verify -n -1 message: $(cat "$tmp/err")"; fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
