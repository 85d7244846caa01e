#!/usr/bin/env bash
# Runs a go test command line, and when it fails ends its output with the names of the
# tests that failed ("go test: failed: TestA TestB"), which go test itself prints only next
# to each test's own output, often far above the last lines.
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  # "--- FAIL: TestX (0.01s)" per failed test; a timeout lists the tests running instead.
  failed=$( { grep -o -- '--- FAIL: [^ ]*' "$log" | cut -d' ' -f3
              sed -n '/^running tests:/,/^$/s/^\t\([^ ]*\) .*/\1/p' "$log"; } | sort -u | tr '\n' ' ')
  echo "go test: failed: ${failed:-(no test named: a build or vet error, see above)}"
fi
exit "$status"
