# The Go binding (bindings/go): vet, race-checked tests, benchmarks against the Go runtime's
# timers. By default the package links the prebuilt library inside the module
# (bindings/go/internal/lib, written by `make go-lib`); with -tags timerwheel_system it links
# an installed one through pkg-config, which the targets here use for a fresh build.
.PHONY: go-toolchain fmt-go check-fmt-go lint-go go-lib check-go-lib go-fresh check-go test-go \
        test-go-module bench-go

export PATH := $(PATH):/usr/local/go/bin
GO ?= go
GOFMT ?= gofmt
GO_DIR := bindings/go
# The Prometheus collector: a module of its own inside the binding's directory, so that the
# binding depends on no Prometheus package; `./...` of the binding leaves it out.
GO_MODULES := $(GO_DIR) $(GO_DIR)/prom
# Every Go source of the repository: the binding, its example and the module test's program.
GO_SOURCES := $(GO_DIR) examples/go tests/go-module
GO_PLATFORM = $(shell $(GO) env GOOS)_$(shell $(GO) env GOARCH)
# The library built from the sources, installed where -tags timerwheel_system finds it.
GO_FRESH_PREFIX := $(CURDIR)/build/go-fresh
GO_FRESH_ENV := PKG_CONFIG_PATH=$(GO_FRESH_PREFIX)/lib/pkgconfig LD_LIBRARY_PATH=$(GO_FRESH_PREFIX)/lib

# Fails, naming `make deps`, when there is no Go.
go-toolchain:
	$(call need,go)

fmt-go: go-toolchain
	$(GOFMT) -w $(GO_SOURCES)

check-fmt-go: go-toolchain
	@unformatted=$$($(GOFMT) -l $(GO_SOURCES)) && if [ -n "$$unformatted" ]; then \
	  echo "check-fmt-go: not gofmt-formatted (run 'make fmt'):" $$unformatted >&2; exit 1; fi

# go vet of the packages as users build them (the prebuilt library's header).
lint-go: go-toolchain
	for m in $(GO_MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done

# Rebuilds the module's prebuilt library for this platform from the sources (profile dist:
# LTO, no debug info) and prints its size. It is committed: run this when the C ABI changes
# (check-go-lib fails until then) and at a release, not on every commit.
go-lib: go-toolchain
	$(CARGO) rustc --profile dist -q -p timerwheel-ffi --lib --crate-type staticlib -- \
	  --print native-static-libs=$(CURDIR)/target/dist/libtimerwheel.native-static-libs
	mk/go-lib.sh build $(GO_PLATFORM) target/dist/libtimerwheel.a \
	  target/dist/libtimerwheel.native-static-libs

# Fails when the committed library's exported symbols or header copy differ from
# include/timerwheel.h (nm against the header's functions).
check-go-lib:
	mk/go-lib.sh check

go-fresh: lib
	$(call need,pkg-config)
	$(MAKE) -s --no-print-directory install PREFIX=$(GO_FRESH_PREFIX)

# go test, its last line naming the tests that failed (mk/go-test-summary.sh).
GO_TEST := $(CURDIR)/mk/go-test-summary.sh $(GO) test

# vet and test every module against the fresh build of the sources; $(1): more go test flags.
go_test_fresh = for m in $(GO_MODULES); do (cd $$m && \
  $(GO_FRESH_ENV) $(GO) vet -tags timerwheel_system ./... && \
  $(GO_FRESH_ENV) $(GO_TEST) -tags timerwheel_system -count=1 $(1) ./...) || exit 1; done

# The fast tier (make check): the tests against this build, without the race detector.
# GO_TEST_FLAGS picks tests, e.g. make check-go GO_TEST_FLAGS="-run TestUseAfterClose -v".
check-go: go-toolchain go-fresh fleet-test-server
	$(call go_test_fresh,$(GO_TEST_FLAGS))

# The tests with the race detector against the committed library, then against a fresh
# build of the sources.
test-go: check-fmt-go lint-go check-go-lib go-fresh fleet-test-server
	for m in $(GO_MODULES); do (cd $$m && $(GO_TEST) -race -count=1 ./...) || exit 1; done
	$(call go_test_fresh,-race)

# As `go get` would: the module served from a local proxy, used by a program of its own
# module, with no Rust toolchain on PATH (tests/go-module/run.sh).
test-go-module: go-toolchain check-go-lib fleet-test-server
	tests/go-module/run.sh

# W1, W2, W3 against time.AfterFunc / Stop / Reset: JSON lines, then a table of ratios.
# GO_BENCH_ARGS="-n 100000" runs smaller sizes. Measures a fresh build of the sources.
bench-go: go-toolchain go-fresh
	cd $(GO_DIR) && $(GO_FRESH_ENV) $(GO) run -tags timerwheel_system ./cmd/bench $(GO_BENCH_ARGS)

FMT_TARGETS += fmt-go
LINT_TARGETS += lint-go
CHECK_TARGETS += check-fmt-go lint-go check-go-lib check-go
TEST_TARGETS += test-go test-go-module
BENCH_TARGETS += bench-go
