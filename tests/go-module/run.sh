#!/usr/bin/env bash
# make test-go-module: the Go binding as a user gets it. The module bindings/go alone is
# zipped the way the Go proxy serves it (the files git would commit) and served from a
# local proxy; a program of a module of its own fetches it with `go get` into an empty
# module cache and builds and runs with no Rust toolchain on PATH, so it can only link the
# prebuilt library inside the module. The package's own tests run from the module cache, a
# vendored build works, and platforms without a prebuilt library fail with a message that
# names the build tag.
set -euo pipefail
cd "$(dirname "$0")/../.."

module=github.com/timerwheel/timerwheel/bindings/go
version=v$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
. tests/route-lib.sh

# Fails unless running "$@" fails with a message containing $1.
expect_failure() {
    local want=$1 out
    shift
    if out=$("$@" 2>&1); then
        echo "test-go-module: '$*' built" >&2
        exit 1
    fi
    if ! grep -q -- "$want" <<<"$out"; then
        echo "test-go-module: '$*' failed without naming $want:" >&2
        echo "$out" >&2
        exit 1
    fi
}

# The proxy: list, .info, .mod and .zip of the one version.
proxy=$work/proxy/$module/@v
mkdir -p "$proxy"
echo "$version" >"$proxy/list"
echo "{\"Version\":\"$version\",\"Time\":\"2026-01-01T00:00:00Z\"}" >"$proxy/$version.info"
cp bindings/go/go.mod "$proxy/$version.mod"
# Leaves out the modules nested in it (bindings/go/prom), as the proxy does.
git ls-files --cached --others --exclude-standard -- bindings/go | python3 -c '
import os, sys, zipfile
prefix, out = sys.argv[1], sys.argv[2]
def nested(path):
    parent = os.path.dirname(path)
    while parent not in ("bindings/go", ""):
        if os.path.exists(os.path.join(parent, "go.mod")):
            return True
        parent = os.path.dirname(parent)
    return False
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
    for path in sys.stdin.read().split():
        if os.path.isfile(path) and not os.path.islink(path) and not nested(path):
            archive.write(path, prefix + os.path.relpath(path, "bindings/go"))
' "$module@$version/" "$proxy/$version.zip"

# The package's fleet tests start their PostgreSQL with fleet-test-server, built by make
# before the Rust toolchain leaves PATH.
export TW_FLEET_TEST_SERVER=${TW_FLEET_TEST_SERVER:-$PWD/target/release/fleet-test-server}

# PATH without cargo and rustc.
drop_rust_from_path test-go-module
export GOPROXY=file://$work/proxy GOSUMDB=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
export GOMODCACHE=$work/modcache

app=$work/app
mkdir -p "$app"
cp tests/go-module/app/main.go "$app/"
cd "$app"
go mod init example.com/app >/dev/null 2>&1
go get "$module@$version" 2>/dev/null
go build -o app .
./app
pass "go get $module@$version, build and run with no Rust toolchain"

go test -count=1 "$module"
pass "the package's tests from the module cache"

go mod vendor
go build -mod=vendor -o app-vendored .
./app-vendored
pass "go mod vendor keeps the prebuilt library"

# netbsd/amd64: a platform without a prebuilt library whose runtime/cgo the host's gcc builds.
expect_failure timerwheel_system env GOOS=netbsd GOARCH=amd64 CGO_ENABLED=1 go build -o /dev/null .
expect_failure CGO_ENABLED env CGO_ENABLED=0 go build -o /dev/null .
pass "no prebuilt library or no cgo: the build names the way out"

echo "test-go-module: $passed passed, 0 failed"
