#!/bin/sh
# Creates the project's Python venv (for the oracle tests) and installs the
# pinned requirements. Installs Debian's python3-venv only if venv is missing.
# Usage: tools/setup_venv.sh VENV_DIR REQUIREMENTS
set -e
venv=$1
req=$2
py=${PYTHON:-python3}
if ! command -v "$py" >/dev/null 2>&1; then
    echo "setup_venv: python3 not found; installing it with apt-get" >&2
    ${SUDO:-} apt-get update -qq && ${SUDO:-} apt-get install -y -qq python3 python3-venv >/dev/null
fi
if [ ! -x "$venv/bin/python" ]; then
    if ! "$py" -m venv "$venv" 2>/dev/null; then
        echo "setup_venv: the venv module is missing; installing python3-venv with apt-get" >&2
        rm -rf "$venv"
        ${SUDO:-} apt-get update -qq && ${SUDO:-} apt-get install -y -qq python3-venv >/dev/null
        "$py" -m venv "$venv"
    fi
fi
echo "setup_venv: installing $(tr '\n' ' ' < "$req")into $venv" >&2
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
