#!/usr/bin/env bash
# make test-python-dist: the Python package as a user gets it. The wheel `make wheel` wrote
# is abi3 and tagged manylinux2014, its extension needs no glibc symbol newer than 2.17, and
# the licences are inside; installed into a fresh virtualenv
# with no Rust toolchain on PATH, the pytest suite passes against the installed package (a
# copy of python/tests run from outside the source tree). The sdist carries the licences and
# the Rust sources it builds from.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
python=${PYTHON:-python3}
. tests/route-lib.sh

fail() {
    echo "test-python-dist: $1" >&2
    exit 1
}

# Fails unless the listing ($1) has every name that follows.
expect_names() {
    local listing=$1 name
    shift
    for name in "$@"; do
        grep -qx -- "$name" <<<"$listing" || fail "$name is missing"
    done
}

shopt -s nullglob
wheels=(dist/timerwheel-"$version"-cp39-abi3-manylinux2014_*.whl)
[ ${#wheels[@]} = 1 ] || fail "expected one abi3 manylinux2014 wheel of $version in dist/, found: $(ls dist)"
wheel=${wheels[0]}
listing=$("$python" -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$wheel")
info=timerwheel-$version.dist-info
expect_names "$listing" "$info/licenses/LICENSE-MIT" "$info/licenses/LICENSE-APACHE" \
    timerwheel/py.typed timerwheel/_timerwheel.pyi timerwheel/_timerwheel.abi3.so
pass "$(basename "$wheel"): abi3, manylinux2014, licences and stubs inside"

# The newest glibc symbol version the extension needs: at most 2.17, what the tag promises.
"$python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' \
    "$wheel" timerwheel/_timerwheel.abi3.so "$work/ext"
newest=$(objdump -T "$work/ext/timerwheel/_timerwheel.abi3.so" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
[ "$(printf '%s\n' "$newest" GLIBC_2.17 | sort -V | tail -n 1)" = GLIBC_2.17 ] ||
    fail "the extension needs $newest, newer than manylinux2014's GLIBC_2.17"
pass "the extension needs at most GLIBC_2.17 (its newest: $newest)"

sdist=dist/timerwheel-$version.tar.gz
[ -f "$sdist" ] || fail "$sdist is missing"
listing=$(tar tzf "$sdist")
expect_names "$listing" "timerwheel-$version/LICENSE-MIT" "timerwheel-$version/LICENSE-APACHE" \
    "timerwheel-$version/pyproject.toml" "timerwheel-$version/Cargo.lock" \
    "timerwheel-$version/python/Cargo.toml" "timerwheel-$version/timerwheel-core/src/lib.rs"
pass "$(basename "$sdist"): licences, pyproject and the Rust sources"

# PATH without cargo and rustc: pip can only install the wheel as built.
drop_rust_from_path test-python-dist

"$python" -m venv "$work/venv"
venv_python=$work/venv/bin/python
"$venv_python" -m pip install -q --disable-pip-version-check --only-binary :all: "$wheel" pytest
cp -r python/tests "$work/tests"
# The fleet's tests start their cluster with the helper `make test-python-dist` builds.
export TW_FLEET_TEST_SERVER=${TW_FLEET_TEST_SERVER:-$PWD/target/release/fleet-test-server}
cd "$work"
"$venv_python" -c '
import pathlib, sys, timerwheel
installed = pathlib.Path(timerwheel.__file__).resolve()
assert pathlib.Path(sys.prefix).resolve() in installed.parents, installed
'
"$venv_python" -m pytest -q -p no:cacheprovider tests
pass "pytest against the wheel installed with no Rust toolchain"

echo "test-python-dist: $passed passed, 0 failed"
