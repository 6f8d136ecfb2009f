#!/bin/sh
# Installs the Debian packages the build needs, only when they are missing:
#   libpcre2-dev  PCRE2, for the tokenizers' pre-tokenizer regexes
# Usage: tools/setup_deps.sh   (make runs it once per build folder)
set -e
if echo '#include <pcre2.h>' | ${CC:-cc} -DPCRE2_CODE_UNIT_WIDTH=8 -E -x c - >/dev/null 2>&1; then
    exit 0
fi
echo "setup_deps: PCRE2 headers missing; installing libpcre2-dev with apt-get" >&2
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
$sudo apt-get install -y -qq libpcre2-dev >/dev/null 2>&1 || {
    $sudo apt-get update -qq && $sudo apt-get install -y -qq libpcre2-dev >/dev/null
}
