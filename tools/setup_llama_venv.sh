#!/bin/sh
# Creates the llama.cpp reference venv used to write the whole-model golden
# files (tools/gen_golden_models.py) and to run bench/vs_llamacpp.py:
# llama-cpp-python, pinned, built from source by pip (a C/C++ compiler and
# cmake are needed; the build takes several minutes on a small machine), and
# gguf-py (for the generator's float64 reference forward pass).
# Nothing in `make test` needs it: the e2e test reads the committed golden files.
# Usage: tools/setup_llama_venv.sh [VENV_DIR]   (default .venv-llama)
set -e
cd "$(dirname "$0")/.."
venv=${1:-.venv-llama}
py=${PYTHON:-python3}
LLAMA_CPP_PYTHON_VERSION=0.3.36
GGUF_VERSION=0.19.0
if "$venv/bin/python" -c "import llama_cpp, numpy, gguf, sys; sys.exit(llama_cpp.__version__ != '$LLAMA_CPP_PYTHON_VERSION')" \
        2>/dev/null; then
    exit 0
fi
if ! command -v cmake >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1; then
    echo "setup_llama_venv: cmake and a C++ compiler are needed; installing them with apt-get" >&2
    ${SUDO:-} apt-get update -qq && ${SUDO:-} apt-get install -y -qq cmake g++ >/dev/null
fi
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
fi
echo "setup_llama_venv: building llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION into $venv (several minutes)" >&2
"$venv/bin/pip" install -q --disable-pip-version-check "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" "gguf==$GGUF_VERSION" numpy
"$venv/bin/python" -c "import llama_cpp; print('setup_llama_venv: llama_cpp', llama_cpp.__version__)" >&2
