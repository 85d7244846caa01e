# The C ABI (crate timerwheel-ffi): library, header, C/C++ tests, install, C benchmark.
.PHONY: lib header check-header check-c-runner test-c test-c-plain test-c-asan test-c-valgrind \
        test-c-valgrind-all test-cpp test-cpp-asan test-install install uninstall bench-c bench-instructions

# The version (Cargo.toml) and the ABI number (timerwheel-ffi/Cargo.toml), each set there only.
TW_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
TW_ABI := $(shell sed -n 's/^abi = \([0-9]*\)$$/\1/p' timerwheel-ffi/Cargo.toml)
TW_LIBDIR := $(CURDIR)/target/release
# The system libraries the static archive needs, as rustc reports them when it builds it.
TW_NATIVE_LIBS := $(TW_LIBDIR)/libtimerwheel.native-static-libs
TW_HEADER := include/timerwheel.h
C_BUILD := build/c
C_TESTS := $(basename $(notdir $(wildcard tests/c/test_*.c)))
C_WARN := -Wall -Wextra -Werror
C_FLAGS := -std=c99 $(C_WARN) -pthread -g -O1 -Iinclude -Itests/c
C_LINK := -L$(TW_LIBDIR) -ltimerwheel -Wl,-rpath,$(TW_LIBDIR)
C_SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# A fork() child is left out (tests/c/test_fork.c): it lacks the parent's threads, so what
# only they point to reads as lost there; ASan checks the children.
VALGRIND := valgrind -q --leak-check=full --errors-for-leak-kinds=definite \
            --show-leak-kinds=definite --error-exitcode=1 --child-silent-after-fork=yes

# The build of the library, in two parts so that check-header can add cargo options between
# them: any other cargo command line builds it anew (rustc's arguments are part of what cargo
# compares), and the next `make lib` again.
TW_LIB_CARGO := $(CARGO) rustc --release -q -p timerwheel-ffi --lib
TW_LIB_RUSTC := -- --print native-static-libs=$(TW_NATIVE_LIBS)

# The shared object's soname is libtimerwheel.so.$(TW_ABI): programs linked against it look
# for that name, so target/release gets the link too.
lib:
	$(TW_LIB_CARGO) $(TW_LIB_RUSTC)
	ln -sf libtimerwheel.so $(TW_LIBDIR)/libtimerwheel.so.$(TW_ABI)

# Regenerates the committed header (cbindgen runs in timerwheel-ffi/build.rs).
header:
	TIMERWHEEL_HEADER=$(CURDIR)/$(TW_HEADER) $(CARGO) build --release -q -p timerwheel-ffi

# Fails when the committed header differs from a fresh generation: the one build.rs writes
# to its OUT_DIR, which cargo names in its build-script-executed message. The build is the
# one `make lib` does (without TIMERWHEEL_HEADER, whose change would rebuild the crate).
check-header:
	@fresh=$$($(TW_LIB_CARGO) --message-format=json $(TW_LIB_RUSTC) | \
	  sed -n '/"reason":"build-script-executed"/{/timerwheel-ffi/s/.*"out_dir":"\([^"]*\)".*/\1/p}') && \
	test -f "$$fresh/timerwheel.h" || { echo "check-header: no header from the build" >&2; exit 1; }; \
	if diff -u $(TW_HEADER) $$fresh/timerwheel.h; then echo "check-header: $(TW_HEADER) is up to date"; \
	else echo "check-header: $(TW_HEADER) is stale: run 'make header'" >&2; exit 1; fi

$(C_BUILD):
	mkdir -p $@

# Each tests/c/test_*.c is one program; it prints "N passed, M failed" and exits non-zero
# on failure. Run natively, then under ASan + UBSan, then under valgrind memcheck.
# C_TESTS=test_contract builds and runs that program alone; TW_TEST=part runs only the tests
# whose name contains part (tests/c/check.h; test-cpp takes it too), e.g.
#   make test-c-plain C_TESTS=test_contract TW_TEST=delete_sync
test-c: check-header check-c-runner test-c-plain test-c-asan test-c-valgrind

test-c-plain: lib | $(C_BUILD)
	@set -e; for t in $(C_TESTS); do \
	  $(CC) $(C_FLAGS) tests/c/$$t.c -o $(C_BUILD)/$$t $(C_LINK); \
	  echo "== $$t"; $(C_BUILD)/$$t; done

test-c-asan: lib | $(C_BUILD)
	@set -e; for t in $(C_TESTS); do \
	  $(CC) $(C_FLAGS) $(C_SANITIZE) tests/c/$$t.c -o $(C_BUILD)/$$t.asan $(C_LINK); \
	  echo "== $$t (ASan + UBSan)"; \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    $(C_BUILD)/$$t.asan; done

# The runner names the tests that failed in its last line (tests/c/runner_fails.c).
check-c-runner: | $(C_BUILD)
	@$(CC) $(C_FLAGS) tests/c/runner_fails.c -o $(C_BUILD)/runner_fails
	@last=$$($(C_BUILD)/runner_fails 2>/dev/null | tail -n 1); \
	if [ "$$last" = "runner_fails: failed: fails_on_purpose" ]; then echo "check-c-runner: ok"; \
	else echo "check-c-runner: the last line does not name the failed test: $$last" >&2; exit 1; fi

# make test runs under valgrind the programs whose checks need it (C_VALGRIND_TESTS): there
# the library (Rust) and SQLite run uninstrumented under ASan, and only valgrind sees their
# reads of freed or uninitialised memory. test_abi: the library reads and writes the sized
# structs up to the size the caller gives (a byte past it or never written); test_durable:
# SQLite and the durable store; test_random_contract and test_contract: every entry point
# raced by threads and the drop/free ownership contract, with no ASan build of the library
# in make test to cover them. The others exercise library paths that make test's fuzzing
# runs with the library itself under ASan (c_abi, virtual_clock, sized_structs,
# export_recreate, durable_store), and their C side under ASan (test-c-asan):
# test-c-valgrind-all runs every program, e.g. before a release or after a change to them.
C_VALGRIND_TESTS := test_abi test_contract test_durable test_random_contract
# C_TESTS given on the command line picks the programs, as for the other C targets.
C_VALGRIND_RUN = $(if $(filter command line,$(origin C_TESTS)),$(C_TESTS),\
  $(filter $(C_VALGRIND_TESTS),$(C_TESTS)))
test-c-valgrind: test-c-plain
	$(call need,valgrind)
	@set -e; for t in $(C_VALGRIND_RUN); do \
	  echo "== $$t (valgrind)"; TW_STRESS_OPS=300 $(VALGRIND) $(C_BUILD)/$$t; done

test-c-valgrind-all:
	$(MAKE) --no-print-directory test-c-valgrind C_VALGRIND_TESTS="$(C_TESTS)"

CPP_FLAGS := -std=c++17 $(C_WARN) -pthread -g -O1 -Iinclude -Ibindings/cpp -Itests/c

test-cpp: lib fleet-test-server | $(C_BUILD)
	$(CXX) $(CPP_FLAGS) tests/cpp/test_wrapper.cpp -o $(C_BUILD)/test_wrapper $(C_LINK)
	$(C_BUILD)/test_wrapper
	$(CXX) $(CPP_FLAGS) $(C_SANITIZE) tests/cpp/test_fleet.cpp -o $(C_BUILD)/test_fleet_cpp $(C_LINK)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 $(C_BUILD)/test_fleet_cpp
	$(CXX) -std=c++17 $(C_WARN) -pthread -g -O1 $(C_SANITIZE) -Iinclude -Ibindings/cpp \
	  -Itests/c tests/cpp/test_groups.cpp -o $(C_BUILD)/test_groups_cpp $(C_LINK)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 $(C_BUILD)/test_groups_cpp

# The C++ test under ASan + UBSan, as the C tests (the wrapper owns callables through drops).
test-cpp-asan: lib | $(C_BUILD)
	$(CXX) $(CPP_FLAGS) $(C_SANITIZE) tests/cpp/test_wrapper.cpp -o $(C_BUILD)/test_wrapper.asan \
	  $(C_LINK)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(C_BUILD)/test_wrapper.asan

# Where `make install` puts things; DESTDIR, if set, is prepended to each (staged installs).
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DOCDIR ?= $(PREFIX)/share/doc/timerwheel
PKGCONFIGDIR := $(LIBDIR)/pkgconfig
CMAKEDIR := $(LIBDIR)/cmake/timerwheel
TW_BUILT := $(TW_LIBDIR)/libtimerwheel.so $(TW_LIBDIR)/libtimerwheel.a $(TW_NATIVE_LIBS)
TW_INSTALLED := $(INCLUDEDIR)/timerwheel.h $(INCLUDEDIR)/timerwheel.hpp \
  $(LIBDIR)/libtimerwheel.so.$(TW_VERSION) $(LIBDIR)/libtimerwheel.so.$(TW_ABI) \
  $(LIBDIR)/libtimerwheel.so $(LIBDIR)/libtimerwheel.a $(PKGCONFIGDIR)/timerwheel.pc \
  $(CMAKEDIR)/timerwheelConfig.cmake $(CMAKEDIR)/timerwheelConfigVersion.cmake \
  $(DOCDIR)/LICENSE-MIT $(DOCDIR)/LICENSE-APACHE
STRIP ?= strip
# The system libraries a program linking the static archive names: what rustc reported,
# but -lgcc_s, which has no archive (a -static link fails on it) and which the compiler
# driver adds itself to a dynamic link (libgcc_s; libgcc_eh under -static).
TW_STATIC_LIBS = $$(sed -e 's/-lgcc_s *//' $(TW_NATIVE_LIBS))
# Fills the @NAME@ fields of timerwheel-ffi/timerwheel.pc.in and timerwheel-ffi/cmake/*.in.
# The CMake package finds the library and the headers relative to its own directory
# (@CMAKE_TO_LIBDIR@, @CMAKE_TO_INCLUDEDIR@), so an installed tree can be moved.
TW_SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
  -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(TW_VERSION)|g' -e 's|@ABI@|$(TW_ABI)|g' \
  -e "s|@CMAKE_TO_LIBDIR@|$$(realpath -m --relative-to=$(CMAKEDIR) $(LIBDIR))|g" \
  -e "s|@CMAKE_TO_INCLUDEDIR@|$$(realpath -m --relative-to=$(CMAKEDIR) $(INCLUDEDIR))|g" \
  -e 's|@VERSION_MAJOR@|$(word 1,$(subst ., ,$(TW_VERSION)))|g' \
  -e 's|@VERSION_MINOR@|$(word 2,$(subst ., ,$(TW_VERSION)))|g' \
  -e "s|@SIZEOF_VOID_P@|$$(($$(getconf LONG_BIT) / 8))|g" \
  -e "s|@LIBS_PRIVATE@|$(TW_STATIC_LIBS)|g" \
  -e "s|@CMAKE_LINK_LIBS@|$$(echo $(TW_STATIC_LIBS) | sed -e 's/-lpthread/Threads::Threads/' -e 's/-l//g' -e 's/ \+/;/g')|g"

# Installs what `make lib` built (it runs no cargo): the header and the C++ wrapper, the
# shared object with its soname links, the static archive, timerwheel.pc, the CMake package
# (lib/cmake/timerwheel) and the licences. The libraries lose their debug information
# (strip --strip-debug; their symbols stay): the archive shrinks by about half, the shared
# object nine-fold.
install: $(TW_BUILT)
	install -d $(addprefix $(DESTDIR),$(INCLUDEDIR) $(LIBDIR) $(PKGCONFIGDIR) $(CMAKEDIR) $(DOCDIR))
	install -m 644 $(TW_HEADER) bindings/cpp/timerwheel.hpp $(DESTDIR)$(INCLUDEDIR)/
	install -m 755 $(TW_LIBDIR)/libtimerwheel.so $(DESTDIR)$(LIBDIR)/libtimerwheel.so.$(TW_VERSION)
	ln -sf libtimerwheel.so.$(TW_VERSION) $(DESTDIR)$(LIBDIR)/libtimerwheel.so.$(TW_ABI)
	ln -sf libtimerwheel.so.$(TW_ABI) $(DESTDIR)$(LIBDIR)/libtimerwheel.so
	install -m 644 $(TW_LIBDIR)/libtimerwheel.a $(DESTDIR)$(LIBDIR)/
	$(STRIP) --strip-debug $(DESTDIR)$(LIBDIR)/libtimerwheel.so.$(TW_VERSION) \
	  $(DESTDIR)$(LIBDIR)/libtimerwheel.a
	install -m 644 LICENSE-MIT LICENSE-APACHE $(DESTDIR)$(DOCDIR)/
	$(TW_SUBST) timerwheel-ffi/timerwheel.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/timerwheel.pc
	$(TW_SUBST) timerwheel-ffi/cmake/timerwheelConfig.cmake.in > $(DESTDIR)$(CMAKEDIR)/timerwheelConfig.cmake
	$(TW_SUBST) timerwheel-ffi/cmake/timerwheelConfigVersion.cmake.in \
	  > $(DESTDIR)$(CMAKEDIR)/timerwheelConfigVersion.cmake

$(TW_BUILT):
	@echo "install: $@ is missing: build first ('make lib'), then install" >&2; exit 1

# Removes what `make install` put there (with the same PREFIX, LIBDIR, ... and DESTDIR).
uninstall:
	rm -f $(addprefix $(DESTDIR),$(TW_INSTALLED))
	@for dir in $(addprefix $(DESTDIR),$(CMAKEDIR) $(DOCDIR)); do \
	  if [ -d $$dir ]; then rmdir --ignore-fail-on-non-empty $$dir; fi; done

# As a user of an installed library would: builds programs with pkg-config (shared and
# static) and with CMake's find_package (C shared and static, C++ through the wrapper)
# against a temporary prefix, runs them, and checks DESTDIR, LIBDIR and uninstall.
test-install: lib
	$(call need,pkg-config cmake)
	tests/install/run.sh

# timeout.c, the baseline of bench-c and bench-instructions, from the directory TIMEOUT_C.
TIMEOUT_C_OBJ = $(C_BUILD)/timeout-c.o
compile_timeout_c = $(CC) -std=c99 -O2 -w -c $(TIMEOUT_C)/timeout.c -I$(TIMEOUT_C) -o $(TIMEOUT_C_OBJ)

# W1-W3 through the C ABI against libuv (make deps installs it), and W1 through the
# Rust API with the same input for the cost of the ABI. BENCH_ARGS=--quick for a short run.
# TIMEOUT_C=dir: also W1 and W2 against timeout.c, from a directory holding its source
# (timeout.c and its headers), compiled here.
bench-c: lib | $(C_BUILD)
	$(call need,pkg-config libuv)
	$(if $(TIMEOUT_C),$(compile_timeout_c))
	$(CC) -std=c99 $(C_WARN) -pthread -O2 -Iinclude bench/c/bench.c -o $(C_BUILD)/bench \
	  $(if $(TIMEOUT_C),-DTW_BENCH_TIMEOUT_C -I$(TIMEOUT_C) $(TIMEOUT_C_OBJ)) \
	  $(C_LINK) $$(pkg-config --cflags --libs libuv)
	$(CARGO) run --release -q -p timerwheel-ffi --example w1_rust -- $(BENCH_ARGS) | tee $(C_BUILD)/w1_rust.json
	$(C_BUILD)/bench --rust $(C_BUILD)/w1_rust.json $(BENCH_ARGS)

# Instructions per call through the C ABI against timeout.c, counted by callgrind over the
# whole process (bench/c/instructions.c, bench/instructions.py): 100,000 one-shots added,
# reset later, deleted in a shuffled order. TIMEOUT_C=dir holds timeout.c's source (its
# timeout.c is compiled here); skipped, saying so, without valgrind or that directory.
bench-instructions: lib | $(C_BUILD)
	@if ! command -v valgrind >/dev/null; then echo "bench-instructions: skipped (no valgrind)"; \
	elif [ -z "$(TIMEOUT_C)" ] || [ ! -f "$(TIMEOUT_C)/timeout.c" ]; then \
	  echo "bench-instructions: skipped (TIMEOUT_C=dir with timeout.c not given)"; \
	else \
	  $(compile_timeout_c) && \
	  $(CC) -std=c99 $(C_WARN) -pthread -O2 -Iinclude -I$(TIMEOUT_C) -DTW_BENCH_TIMEOUT_C \
	    bench/c/instructions.c $(TIMEOUT_C_OBJ) -o $(C_BUILD)/instructions $(C_LINK) && \
	  $(PYTHON) bench/instructions.py $(C_BUILD)/instructions; \
	fi

CHECK_TARGETS += check-header check-c-runner test-c-plain test-cpp
TEST_TARGETS += test-c test-cpp test-cpp-asan test-install
BENCH_TARGETS += bench-c bench-instructions
