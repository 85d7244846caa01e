# Sourced by the tests of the install routes (tests/*/run.sh): a scratch directory removed
# at exit, a pass counter, and a PATH without the Rust toolchain, as a user without one has.
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT # a Go module cache is read-only
passed=0

pass() {
    echo "ok   $1"
    passed=$((passed + 1))
}

# Drops every PATH entry that holds cargo or rustc; exits if either is still found. $1 names
# the test in the message.
drop_rust_from_path() {
    local path="" dir
    while IFS= read -r -d: dir; do
        if [ -n "$dir" ] && [ ! -x "$dir/cargo" ] && [ ! -x "$dir/rustc" ]; then path+="$dir:"; fi
    done <<<"$PATH:"
    export PATH=${path%:}
    if command -v cargo >/dev/null || command -v rustc >/dev/null; then
        echo "$1: cargo or rustc is still on PATH" >&2
        exit 1
    fi
}
