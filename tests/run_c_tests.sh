#!/bin/sh
# Runs the C test binaries given as arguments (after the build dir), then the
# CLI checks; each prints its own closing line. Exit status: any failure.
build=$1; shift
status=0
for t in "$@"; do
    echo "-- $t"
    "$t" || status=1
done
echo "-- tests/test_cli.sh"
sh tests/test_cli.sh "$build/nib" || status=1
exit $status
