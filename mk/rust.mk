# The Rust workspace: build, format, lint, test, bench.
.PHONY: build test-rust bench-rust

build:
	$(CARGO) build --release --workspace

test-rust:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps -q
	$(CARGO) test --workspace --release

bench-rust:
	$(CARGO) run --release -q -p timerwheel-core --example bench_wheel -- $(BENCH_ARGS)

TEST_TARGETS += test-rust
BENCH_TARGETS += bench-rust
