#!/usr/bin/env bash
# Whether a run left the working tree as it found it (make test ends with this check).
#
#   mk/tree-state.sh record FILE   writes the tree's state to FILE
#   mk/tree-state.sh check FILE    fails, naming the files, when the state differs from FILE
#                                  (from a clean tree when FILE does not exist)
#
# The state is every path `git status` reports (a tracked file changed, an untracked file
# .gitignore does not cover) with a hash of its content, so edits made before the run do not
# count, but a run that changes such a file again does. Outside a git checkout (a release
# tarball) both succeed with a note.
set -euo pipefail
cd "$(dirname "$0")/.."

state() {
    local entry status path
    git status --porcelain=v1 -z --untracked-files=all | while IFS= read -r -d '' entry; do
        status=${entry:0:2}
        path=${entry:3}
        # A rename is followed by its source path, which the state does not need.
        if [[ $status == R* ]]; then IFS= read -r -d '' _; fi
        if [ -f "$path" ]; then
            echo "$status $path $(git hash-object -- "$path")"
        else
            echo "$status $path"
        fi
    done | sort
}

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "tree-state: not a git checkout: skipped"
    exit 0
fi

case "${1:-}" in
record)
    mkdir -p "$(dirname "$2")"
    state >"$2"
    ;;
check)
    if ! changed=$(diff <(cat "$2" 2>/dev/null || true) <(state)); then
        echo "check-clean: files changed against the tree recorded when the run began (git status):" >&2
        sed -n -e 's/ [0-9a-f]\{40\}$//' -e 's/^[<>] /  /p' <<<"$changed" | sort -u >&2
        exit 1
    fi
    echo "check-clean: the working tree is as the run found it"
    ;;
*)
    echo "usage: mk/tree-state.sh record|check FILE" >&2
    exit 2
    ;;
esac
