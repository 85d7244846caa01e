# The Go binding (bindings/go): vet, race-checked tests, benchmarks against the Go runtime's
# timers. The package links target/release/libtimerwheel.a, which `lib` (mk/c.mk) builds.
.PHONY: go-toolchain test-go bench-go

export PATH := $(PATH):/usr/local/go/bin
GO ?= go
GO_DIR := bindings/go

# Go comes with the machine; a bare Debian gets its package.
go-toolchain:
	@command -v $(GO) >/dev/null || (apt-get update -qq && apt-get install -y -qq golang-go)

test-go: go-toolchain lib
	cd $(GO_DIR) && $(GO) vet ./... && $(GO) test -race -count=1 ./...

# W1, W2, W3 against time.AfterFunc / Stop / Reset: JSON lines, then a table of ratios.
# GO_BENCH_ARGS="-n 100000" runs smaller sizes.
bench-go: go-toolchain lib
	cd $(GO_DIR) && $(GO) run ./cmd/bench $(GO_BENCH_ARGS)

TEST_TARGETS += test-go
BENCH_TARGETS += bench-go
