#!/usr/bin/env bash
# make test-install: installs the built library into temporary prefixes as a user would, and
# builds and runs programs against it: with pkg-config (shared and static) and with CMake's
# find_package (C shared and static, C++ through the wrapper). Checks that install runs no
# cargo and honours LIBDIR, INCLUDEDIR and DESTDIR, and that uninstall removes every file.
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

export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046 # pkg-config prints several flags
"$cc" -std=c99 -Wall -Wextra -Werror tests/install/app.c -o "$work/app" \
    $(pkg-config --cflags --libs timerwheel)
LD_LIBRARY_PATH=$libdir "$work/app"
pass "pkg-config, shared"

# shellcheck disable=SC2046
"$cc" -std=c99 -Wall -Wextra -Werror tests/install/app.c -o "$work/app-static" \
    $(pkg-config --cflags timerwheel) "$(pkg-config --variable=libdir timerwheel)/libtimerwheel.a" \
    $(pkg-config --static --libs-only-l timerwheel | sed 's/-ltimerwheel//')
check_static "$work/app-static"
"$work/app-static"
pass "pkg-config, static (Libs.private)"

cmake -S tests/install -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    -DTW_VERSION="$version" -DTW_OTHER_ABI_VERSION="$other_abi" >"$work/cmake.log" ||
    { cat "$work/cmake.log"; exit 1; }
cmake --build "$work/cmake" -j 2 >"$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/cmake/app_shared"
check_static "$work/cmake/app_static"
"$work/cmake/app_static"
"$work/cmake/app_cpp"
pass "find_package(timerwheel $version EXACT CONFIG): timerwheel::timerwheel, timerwheel::timerwheel_static, C++ wrapper"

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
