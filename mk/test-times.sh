#!/usr/bin/env bash
# How long each suite of make test takes (the Makefile's timed-<suite>), kept in FILE as
# "seconds suite" lines.
#
#   mk/test-times.sh start FILE                 empties FILE and notes when the run began
#   mk/test-times.sh run FILE SUITE COMMAND...  runs COMMAND, prints and records its time
#   mk/test-times.sh summary FILE               the suites slowest first, and the total
set -uo pipefail

BUDGET_S=1800

case "${1:-}" in
start)
    mkdir -p "$(dirname "$2")"
    date +%s >"$2.start"
    : >"$2"
    ;;
run)
    file=$2 suite=$3
    mkdir -p "$(dirname "$file")"
    shift 3
    begin=$(date +%s)
    "$@"
    rc=$?
    took=$(($(date +%s) - begin))
    if [ $rc -eq 0 ]; then
        echo "make test: $suite took $took s"
        echo "$took $suite" >>"$file"
    else
        echo "make test: $suite FAILED after $took s"
        echo "$took $suite (FAILED)" >>"$file"
    fi
    exit $rc
    ;;
summary)
    file=$2
    total=$(($(date +%s) - $(cat "$file.start" 2>/dev/null || date +%s)))
    echo "make test: time per suite (slowest first; overlapping suites add up to more than the total):"
    sort -rn "$file" | awk '{ printf "  %6d s  %s\n", $1, substr($0, index($0, " ") + 1) }'
    echo "make test: ${total} s in all (budget ${BUDGET_S} s)"
    ;;
*)
    echo "usage: mk/test-times.sh start|run|summary FILE ..." >&2
    exit 2
    ;;
esac
