#!/usr/bin/env bash
# The system packages the build, its tests and its benchmarks need: the one place that
# installs them (Debian or Ubuntu, apt-get).
#
#   mk/deps.sh install       (make deps; make test runs it first) installs those missing
#   mk/deps.sh need NAME...  fails when one of NAME is missing, naming `make deps`; the make
#                            targets that use a tool call it instead of installing anything
#
# The Rust toolchain (rustup), a C and C++ compiler, binutils and Python 3 come with the
# machine. Tools that are not system packages stay with the targets that use them: the
# virtualenvs with maturin, pytest and matplotlib (mk/python.mk, mk/bench.mk) and cargo-fuzz
# (mk/reliability.mk).
set -euo pipefail

# NAME: who needs it.
NAMES=(
    valgrind   # test-c-valgrind
    pkg-config # test-install, test-go and bench-c find the library and libuv with it
    cmake      # test-install (find_package)
    libuv      # bench-c, the C baseline
    go         # test-go, test-go-module, test-examples, bench-go
    venv       # every virtualenv (test-python, test-python-dist, bench-report)
    sqlite3    # demo-billing, test-demo: the billing demo's --restart-at saves to SQLite
    postgresql # test-fleet, bench-fleet: a private PostgreSQL cluster (initdb, pg_ctl)
    openssl    # test-fleet: the TLS tests make their certificates with the openssl command
)

# The Debian package that provides NAME.
package() {
    case $1 in
    libuv) echo libuv1-dev ;;
    go) echo golang-go ;;
    venv) echo python3-venv ;;
    sqlite3) printf '%s\n' libsqlite3-dev sqlite3 ;;
    *) echo "$1" ;;
    esac
}

# Whether NAME is there. Make puts /usr/local/go/bin (Go from go.dev) on PATH; GO and PYTHON
# are the make variables of the same names.
present() {
    case $1 in
    libuv) pkg-config --exists libuv ;;
    go) command -v "${GO:-go}" ;;
    venv) "${PYTHON:-python3}" -c 'import ensurepip, venv' ;;
    sqlite3) pkg-config --exists sqlite3 && command -v sqlite3 ;;
    postgresql) compgen -G '/usr/lib/postgresql/*/bin/initdb' ;;
    *) command -v "$1" ;;
    esac >/dev/null 2>&1
}

# The packages of the NAMEs that are missing, one per line.
missing_packages() {
    local name
    for name in "$@"; do
        present "$name" || package "$name"
    done
}

install() {
    local packages sudo=()
    mapfile -t packages < <(missing_packages "${NAMES[@]}")
    if [ ${#packages[@]} -eq 0 ]; then
        echo "deps: every system package is installed"
        return
    fi
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    echo "deps: installing ${packages[*]}"
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}"
}

need() {
    local packages
    mapfile -t packages < <(missing_packages "$@")
    if [ ${#packages[@]} -gt 0 ]; then
        echo "missing system packages: ${packages[*]}: run 'make deps'" >&2
        return 1
    fi
}

case "${1:-}" in
install) install ;;
need)
    shift
    need "$@"
    ;;
*)
    echo "usage: $0 install | need NAME..." >&2
    exit 2
    ;;
esac
