#!/bin/sh
# Runs every CPU test runner and adds up their closing lines
# ("N passed, N failed[, N skipped]") into one total line.
# Usage: tests/run_all.sh MAKE   (called by `make test`)
MAKE=${1:-make}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
# the real models the oracle and end-to-end tests use (cached after the first fetch)
$MAKE --no-print-directory -s models || { echo "could not fetch the test models"; status=1; }
for target in test-c test-oracle test-e2e test-fuzz test-hostile; do
    echo "== $target"
    $MAKE --no-print-directory -s $target 2>&1 | tee -a "$log"
    # a runner that dies without its closing line must still fail the run
    [ "$(tail -n 1 "$log" | grep -c 'passed, ')" = 1 ] || { echo "$target: no summary line"; status=1; }
done
awk '/^[0-9]+ passed, [0-9]+ failed/ {
        p += $1; f += $3; if ($5 != "") s += $5
     }
     END { printf "TOTAL: %d passed, %d failed, %d skipped\n", p, f, s; exit (f > 0) }' "$log" || status=1
exit $status
