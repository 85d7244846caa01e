# The C ABI (crate timerwheel-ffi): library, header, C/C++ tests, install, C benchmark.
.PHONY: lib header check-header test-c test-c-plain test-c-asan test-c-valgrind test-cpp \
        test-install install uninstall bench-c

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

# The shared object's soname is libtimerwheel.so.$(TW_ABI): programs linked against it look
# for that name, so target/release gets the link too.
lib:
	$(CARGO) rustc --release -q -p timerwheel-ffi --lib -- \
	  --print native-static-libs=$(TW_NATIVE_LIBS)
	ln -sf libtimerwheel.so $(TW_LIBDIR)/libtimerwheel.so.$(TW_ABI)

# Regenerates the committed header (cbindgen runs in timerwheel-ffi/build.rs).
header:
	TIMERWHEEL_HEADER=$(CURDIR)/$(TW_HEADER) $(CARGO) build --release -q -p timerwheel-ffi

# Fails when the committed header differs from a fresh generation.
check-header:
	@tmp=$$(mktemp --suffix=.h) && \
	TIMERWHEEL_HEADER=$$tmp $(CARGO) build --release -q -p timerwheel-ffi && \
	if diff -u $(TW_HEADER) $$tmp; then rm -f $$tmp; echo "check-header: $(TW_HEADER) is up to date"; \
	else rm -f $$tmp; echo "check-header: $(TW_HEADER) is stale: run 'make header'" >&2; exit 1; fi

$(C_BUILD):
	mkdir -p $@

# Each tests/c/test_*.c is one program; it prints "N passed, M failed" and exits non-zero
# on failure. Run natively, then under ASan + UBSan, then under valgrind memcheck.
# C_TESTS=test_contract builds and runs that program alone; TW_TEST=part runs only the tests
# whose name contains part (tests/c/check.h; test-cpp takes it too), e.g.
#   make test-c-plain C_TESTS=test_contract TW_TEST=delete_sync
test-c: check-header test-c-plain test-c-asan test-c-valgrind

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

test-c-valgrind: test-c-plain
	$(call need,valgrind)
	@set -e; for t in $(C_TESTS); do \
	  echo "== $$t (valgrind)"; TW_STRESS_OPS=300 $(VALGRIND) $(C_BUILD)/$$t; done

test-cpp: lib | $(C_BUILD)
	$(CXX) -std=c++17 $(C_WARN) -pthread -g -O1 -Iinclude -Ibindings/cpp -Itests/c \
	  tests/cpp/test_wrapper.cpp -o $(C_BUILD)/test_wrapper $(C_LINK)
	$(C_BUILD)/test_wrapper
	$(CXX) -std=c++17 $(C_WARN) -pthread -g -O1 $(C_SANITIZE) -Iinclude -Ibindings/cpp \
	  -Itests/c tests/cpp/test_groups.cpp -o $(C_BUILD)/test_groups_cpp $(C_LINK)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 $(C_BUILD)/test_groups_cpp

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
# Fills the @NAME@ fields of timerwheel-ffi/timerwheel.pc.in and timerwheel-ffi/cmake/*.in.
TW_SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
  -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(TW_VERSION)|g' -e 's|@ABI@|$(TW_ABI)|g' \
  -e 's|@VERSION_MAJOR@|$(word 1,$(subst ., ,$(TW_VERSION)))|g' \
  -e 's|@VERSION_MINOR@|$(word 2,$(subst ., ,$(TW_VERSION)))|g' \
  -e "s|@SIZEOF_VOID_P@|$$(($$(getconf LONG_BIT) / 8))|g" \
  -e "s|@LIBS_PRIVATE@|$$(cat $(TW_NATIVE_LIBS))|g" \
  -e "s|@CMAKE_LINK_LIBS@|$$(sed -e 's/-lpthread/Threads::Threads/' -e 's/-l//g' -e 's/ \+/;/g' $(TW_NATIVE_LIBS))|g"

# Installs what `make lib` built (it runs no cargo): the header and the C++ wrapper, the
# shared object with its soname links, the static archive, timerwheel.pc, the CMake package
# (lib/cmake/timerwheel) and the licences.
install: $(TW_BUILT)
	install -d $(addprefix $(DESTDIR),$(INCLUDEDIR) $(LIBDIR) $(PKGCONFIGDIR) $(CMAKEDIR) $(DOCDIR))
	install -m 644 $(TW_HEADER) bindings/cpp/timerwheel.hpp $(DESTDIR)$(INCLUDEDIR)/
	install -m 755 $(TW_LIBDIR)/libtimerwheel.so $(DESTDIR)$(LIBDIR)/libtimerwheel.so.$(TW_VERSION)
	ln -sf libtimerwheel.so.$(TW_VERSION) $(DESTDIR)$(LIBDIR)/libtimerwheel.so.$(TW_ABI)
	ln -sf libtimerwheel.so.$(TW_ABI) $(DESTDIR)$(LIBDIR)/libtimerwheel.so
	install -m 644 $(TW_LIBDIR)/libtimerwheel.a $(DESTDIR)$(LIBDIR)/
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

# W1-W3 through the C ABI against libuv (make deps installs it), and W1 through the
# Rust API with the same input for the cost of the ABI. BENCH_ARGS=--quick for a short run.
# TIMEOUT_C=dir: also W1 and W2 against timeout.c, from a directory holding its timeout.h
# and a timeout.o you built there (docs/benchmarks.md says how); nothing here builds it.
bench-c: lib | $(C_BUILD)
	$(call need,pkg-config libuv)
	$(CC) -std=c99 $(C_WARN) -pthread -O2 -Iinclude bench/c/bench.c -o $(C_BUILD)/bench \
	  $(if $(TIMEOUT_C),-DTW_BENCH_TIMEOUT_C -I$(TIMEOUT_C) $(TIMEOUT_C)/timeout.o) \
	  $(C_LINK) $$(pkg-config --cflags --libs libuv)
	$(CARGO) run --release -q -p timerwheel-ffi --example w1_rust -- $(BENCH_ARGS) | tee $(C_BUILD)/w1_rust.json
	$(C_BUILD)/bench --rust $(C_BUILD)/w1_rust.json $(BENCH_ARGS)

CHECK_TARGETS += check-header test-c-plain test-cpp
TEST_TARGETS += test-c test-cpp test-install
BENCH_TARGETS += bench-c
