#!/usr/bin/env bash
# make help: the lines of mk/help.txt (a target and what it does), then the targets of the
# make files that it does not list. `mk/help.sh check` (make check) fails when a line of
# mk/help.txt names no target, so the list cannot name one that was renamed or removed.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every target declared .PHONY in the make files, one per line.
phony_targets() {
    sed -e ':a' -e '/\\$/N' -e 's/\\\n//' -e 'ta' Makefile mk/*.mk |
        sed -n 's/^\.PHONY://p' | tr -s ' \t' '\n' | grep -v -e '^$' -e '\$' | sort -u
}

# The targets mk/help.txt lists, one per line.
listed_targets() {
    grep -v -e '^#' -e '^$' mk/help.txt | cut -d' ' -f1 | sort -u
}

case "${1:-}" in
check)
    unknown=$(comm -23 <(listed_targets) <(phony_targets))
    if [ -n "$unknown" ]; then
        echo "check-help: mk/help.txt lists targets no make file declares:" $unknown >&2
        exit 1
    fi
    echo "check-help: every target of mk/help.txt exists"
    ;;
*)
    echo "make TARGET [VAR=value ...]; the comment above a target in Makefile or mk/*.mk says more."
    grep -v -e '^#' -e '^$' mk/help.txt | sed 's/^/  /'
    others=$(comm -13 <(listed_targets) <(phony_targets) | tr '\n' ' ')
    if [ -n "$others" ]; then echo "Also: $others"; fi
    ;;
esac
