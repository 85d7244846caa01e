# The C ABI (crate timerwheel-ffi): library, header, C/C++ tests, install, C benchmark.
.PHONY: lib header check-header test-c test-c-plain test-c-asan test-c-valgrind test-cpp \
        test-install install bench-c

PREFIX ?= /usr/local
TW_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
TW_ABI := 0
TW_LIBDIR := $(CURDIR)/target/release
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
	$(CARGO) build --release -q -p timerwheel-ffi
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
	@command -v valgrind >/dev/null || (apt-get update -qq && apt-get install -y -qq valgrind)
	@set -e; for t in $(C_TESTS); do \
	  echo "== $$t (valgrind)"; TW_STRESS_OPS=300 $(VALGRIND) $(C_BUILD)/$$t; done

test-cpp: lib | $(C_BUILD)
	$(CXX) -std=c++17 $(C_WARN) -pthread -g -O1 -Iinclude -Ibindings/cpp -Itests/c \
	  tests/cpp/test_wrapper.cpp -o $(C_BUILD)/test_wrapper $(C_LINK)
	$(C_BUILD)/test_wrapper

# Installs the header (and the C++ wrapper), the shared object with its soname links, the
# static archive and timerwheel.pc under $(PREFIX).
install: lib
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(TW_HEADER) bindings/cpp/timerwheel.hpp $(DESTDIR)$(PREFIX)/include/
	install -m 755 $(TW_LIBDIR)/libtimerwheel.so $(DESTDIR)$(PREFIX)/lib/libtimerwheel.so.$(TW_VERSION)
	ln -sf libtimerwheel.so.$(TW_VERSION) $(DESTDIR)$(PREFIX)/lib/libtimerwheel.so.$(TW_ABI)
	ln -sf libtimerwheel.so.$(TW_ABI) $(DESTDIR)$(PREFIX)/lib/libtimerwheel.so
	install -m 644 $(TW_LIBDIR)/libtimerwheel.a $(DESTDIR)$(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(TW_VERSION)|' \
	  timerwheel-ffi/timerwheel.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/timerwheel.pc

# Installs into a temporary prefix, then builds and runs a C program with pkg-config,
# linked once against the shared object and once against the static archive.
test-install:
	@command -v pkg-config >/dev/null || (apt-get update -qq && apt-get install -y -qq pkg-config)
	@set -e; prefix=$$(mktemp -d); trap 'rm -rf $$prefix' EXIT; \
	$(MAKE) -s install PREFIX=$$prefix; \
	export PKG_CONFIG_PATH=$$prefix/lib/pkgconfig; \
	$(CC) -std=c99 $(C_WARN) tests/install/app.c -o $$prefix/app $$(pkg-config --cflags --libs timerwheel); \
	LD_LIBRARY_PATH=$$prefix/lib $$prefix/app; \
	$(CC) -std=c99 $(C_WARN) tests/install/app.c -o $$prefix/app-static $$(pkg-config --cflags timerwheel) \
	  $$(pkg-config --variable=libdir timerwheel)/libtimerwheel.a $$(pkg-config --static --libs-only-l timerwheel | sed 's/-ltimerwheel//'); \
	$$prefix/app-static; \
	echo "test-install: 2 passed, 0 failed"

# W1-W3 through the C ABI against libuv (installed here if missing), and W1 through the
# Rust API with the same input for the cost of the ABI. BENCH_ARGS=--quick for a short run.
bench-c: lib | $(C_BUILD)
	@pkg-config --exists libuv || (apt-get update -qq && apt-get install -y -qq libuv1-dev)
	$(CC) -std=c99 $(C_WARN) -pthread -O2 -Iinclude bench/c/bench.c -o $(C_BUILD)/bench \
	  $(C_LINK) $$(pkg-config --cflags --libs libuv)
	$(CARGO) run --release -q -p timerwheel-ffi --example w1_rust -- $(BENCH_ARGS) | tee $(C_BUILD)/w1_rust.json
	$(C_BUILD)/bench --rust $(C_BUILD)/w1_rust.json $(BENCH_ARGS)

TEST_TARGETS += test-c test-cpp test-install
BENCH_TARGETS += bench-c
