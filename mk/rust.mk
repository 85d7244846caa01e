# The Rust workspace: build, format, lint, test, bench.
.PHONY: build fmt-rust check-fmt-rust lint-rust test-rust bench-rust test-durable-kill

build:
	$(CARGO) build --release --workspace

fmt-rust:
	$(CARGO) fmt --all

check-fmt-rust:
	$(CARGO) fmt --all -- --check

lint-rust:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The docs without warnings, then the workspace's unit, integration, property and doc tests
# (a few seconds once built; loom, fuzzing and the soak are in mk/reliability.mk; the fleet
# crate's tests start PostgreSQL clusters and run in test-fleet, mk/fleet.mk; the FFI
# crate's tests/fleet.rs, the tw_fleet_* calls, starts one cluster here).
# RUST_TESTED: the packages of that build. Other cargo commands of make test that need no
# more (the soak, the fuzz replays) select the same, so that the core and the FFI crate are
# compiled once for them all: -p timerwheel-core alone resolves other features of the
# dependencies, and cargo builds the whole chain again.
RUST_TESTED := --workspace --exclude timerwheel-fleet
test-rust: check-fmt-rust lint-rust
	$(call need,postgresql)
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps -q
	$(CARGO) test --release $(RUST_TESTED)

# Durable timers against SIGKILL at 100 random moments, in sync and in async mode (cargo
# test runs 10 of each).
TW_KILLS ?= 100
test-durable-kill:
	TW_KILLS=$(TW_KILLS) $(CARGO) test --release -p timerwheel-core --features sqlite \
		--test durable_kill -- survive_sigkill

bench-rust:
	$(CARGO) run --release -q -p timerwheel-core --example bench_wheel -- $(BENCH_ARGS)

FMT_TARGETS += fmt-rust
LINT_TARGETS += lint-rust
CHECK_TARGETS += test-rust
TEST_TARGETS += test-rust
BENCH_TARGETS += bench-rust
