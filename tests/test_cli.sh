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

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
