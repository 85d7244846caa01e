#!/usr/bin/env bash
# make test-install: installs the built library into temporary prefixes as a user would, and
# builds and runs programs against it: README's C example with its own command line, with
# pkg-config (shared, static archive, fully static) and with CMake's find_package (C shared
# and static, C++ through the wrapper), also after the installed tree was moved. Checks that
# install runs no cargo, strips the debug information and honours LIBDIR, INCLUDEDIR and
# DESTDIR, and that uninstall removes every file.
# `make lib` has run before (the Makefile's test-install does it).
set -euo pipefail
cd "$(dirname "$0")/../.."

. tests/route-lib.sh

# make with CARGO=false: install and uninstall must not need cargo.
run_make() {
    make -s --no-print-directory CARGO=false "$@"
}

# Fails unless the program links no libtimerwheel.so.
check_static() {
    if readelf -d "$1" | grep -q 'NEEDED.*libtimerwheel'; then
        echo "test-install: $1 needs libtimerwheel.so" >&2
        exit 1
    fi
}

# Fails when the library $1 carries debug information.
check_stripped() {
    # grep reads all of objdump's output (-q would stop early, and pipefail fail the pipe).
    if objdump -h "$1" | grep ' \.debug_' >/dev/null; then
        echo "test-install: $1 has debug information" >&2
        exit 1
    fi
}

# Runs "$@" (a compiler), its output kept in a log shown only on failure (a -static link
# warns about glibc functions that load shared libraries anyway).
quiet() {
    "$@" >"$work/cc.log" 2>&1 || { cat "$work/cc.log" >&2; exit 1; }
}

# Configures and builds tests/install's CMake project in $1 against the prefix $2, and
# runs its programs.
cmake_consumer() {
    cmake -S tests/install -B "$1" -DCMAKE_PREFIX_PATH="$2" -DCMAKE_BUILD_TYPE=Release \
        -DTW_VERSION="$version" -DTW_OTHER_ABI_VERSION="$other_abi" >"$work/cmake.log" ||
        { cat "$work/cmake.log"; exit 1; }
    cmake --build "$1" -j 2 >"$work/build.log" || { cat "$work/build.log"; exit 1; }
    "$1/app_shared"
    check_static "$1/app_static"
    "$1/app_static"
    "$1/app_cpp"
}

# Fails when a file or link is left under $1.
check_empty() {
    local left
    left=$(find "$1" -type f -o -type l)
    if [ -n "$left" ]; then
        echo "test-install: uninstall left: $left" >&2
        exit 1
    fi
}

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
if [ "$major" = 0 ] && [ "$minor" -gt 0 ]; then other_abi="0.$((minor - 1))"; else other_abi=""; fi

# A Debian-style LIBDIR (lib/<multiarch>, where CMake looks too) and an INCLUDEDIR of its own.
cc=${CC:-cc}
prefix=$work/prefix
libdir=$prefix/lib/$("$cc" -print-multiarch 2>/dev/null || true)
dirs=(PREFIX="$prefix" LIBDIR="${libdir%/}" INCLUDEDIR="$prefix/include/tw")
run_make install "${dirs[@]}"
pass "install with LIBDIR and INCLUDEDIR, no cargo"

check_stripped "$libdir/libtimerwheel.a"
check_stripped "$libdir/libtimerwheel.so.$version"
pass "installed libraries without debug information"

export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046 # pkg-config prints several flags
"$cc" -std=c99 -Wall -Wextra -Werror tests/install/app.c -o "$work/app" \
    $(pkg-config --cflags --libs timerwheel)
LD_LIBRARY_PATH=$libdir "$work/app"
pass "pkg-config, shared"

# README's C example, built with README's command line, plus the rpath README gives for a
# prefix the dynamic loader does not search: it runs without LD_LIBRARY_PATH.
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Werror examples/c/hello.c -o "$work/hello" \
    $(pkg-config --cflags --libs timerwheel) -Wl,-rpath,"$(pkg-config --variable=libdir timerwheel)"
env -u LD_LIBRARY_PATH "$work/hello"
pass "examples/c/hello.c: cc -std=c11 -Wall -Werror, rpath"

# shellcheck disable=SC2046
"$cc" -std=c99 -Wall -Wextra -Werror tests/install/app.c -o "$work/app-static" \
    $(pkg-config --cflags timerwheel) "$(pkg-config --variable=libdir timerwheel)/libtimerwheel.a" \
    $(pkg-config --static --libs-only-l timerwheel | sed 's/-ltimerwheel//')
check_static "$work/app-static"
"$work/app-static"
pass "pkg-config, static (Libs.private)"

# shellcheck disable=SC2046
quiet "$cc" -static -std=c11 -Wall -Werror tests/install/app.c -o "$work/app-all-static" \
    $(pkg-config --static --cflags --libs timerwheel)
check_static "$work/app-all-static"
"$work/app-all-static"
pass "pkg-config --static with cc -static"

cmake_consumer "$work/cmake" "$prefix"
pass "find_package(timerwheel $version EXACT CONFIG): timerwheel::timerwheel, timerwheel::timerwheel_static, C++ wrapper"

# Installed in one place, moved to another: the CMake package still finds its files.
run_make install PREFIX="$work/reloc/first"
mv "$work/reloc/first" "$work/reloc/moved"
if grep -rq "$work/reloc/first" "$work/reloc/moved/lib/cmake"; then
    echo "test-install: the CMake package names the prefix it was installed to" >&2
    exit 1
fi
cmake_consumer "$work/cmake-moved" "$work/reloc/moved"
pass "find_package from an installed tree that was moved"

run_make uninstall "${dirs[@]}"
check_empty "$prefix"
pass "uninstall"

stage=$work/stage
run_make install DESTDIR="$stage" PREFIX=/opt/timerwheel
test -f "$stage/opt/timerwheel/lib/libtimerwheel.a"
test -f "$stage/opt/timerwheel/lib/cmake/timerwheel/timerwheelConfig.cmake"
test -f "$stage/opt/timerwheel/share/doc/timerwheel/LICENSE-APACHE"
if grep -rq "$stage" "$stage/opt/timerwheel/lib/pkgconfig" "$stage/opt/timerwheel/lib/cmake"; then
    echo "test-install: an installed file names the staging directory" >&2
    exit 1
fi
run_make uninstall DESTDIR="$stage" PREFIX=/opt/timerwheel
check_empty "$stage"
pass "DESTDIR install and uninstall"

echo "test-install: $passed passed, 0 failed"
