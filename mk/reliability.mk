# Reliability: the soak, loom model checking, fuzzing.
.PHONY: soak test-soak

SOAK_SECONDS ?= 60

# A million live timers under random churn for SOAK_SECONDS; fails on any lost timer or drop.
# Built as test-rust builds it ($(RUST_TESTED), mk/rust.mk), as are the replays below.
soak:
	$(CARGO) build --release -q $(RUST_TESTED) --example soak
	$(CURDIR)/target/release/examples/soak $(SOAK_SECONDS)

test-soak:
	$(MAKE) --no-print-directory soak SOAK_SECONDS=10

TEST_TARGETS += test-soak

# Loom model checking of the shard's state machine and the tick thread's wake-up, in a
# target directory of its own so that the cfg does not rebuild the normal one.
.PHONY: test-loom
LOOM_MAX_PREEMPTIONS ?= 3

test-loom:
	RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=$(CURDIR)/target/loom LOOM_MAX_PREEMPTIONS=$(LOOM_MAX_PREEMPTIONS) \
		$(CARGO) test --release -p timerwheel-core --lib loom -- --nocapture --test-threads=1

TEST_TARGETS += test-loom

# Fuzzing (cargo-fuzz, nightly): each target for FUZZ_SECONDS from its committed seeds
# (fuzz/seeds/<target>); the growing corpus stays in fuzz/corpus (not committed). A crash, or
# an input running longer than its timeout (a hang), lands in fuzz/artifacts/<target>/: copy
# it to fuzz/regressions/<target>/, where the stable replay test runs it from then on.
# wheel_ops is safe Rust: no sanitizer and no comparison tracing, for speed; the targets
# that cross the C boundary: AddressSanitizer. Each sanitizer builds in a target directory
# of its own, so that going from one target to the next rebuilds nothing. fuzz/Cargo.lock
# is committed: a run must leave the working tree clean.
FUZZ_SECONDS ?= 300
FUZZ_TIMEOUT ?= 2
FUZZ_TOOLCHAIN ?= nightly
FUZZ_TARGETS := wheel_ops c_abi virtual_clock sized_structs export_recreate durable_store threads
FUZZ_SANITIZER_wheel_ops := none
FUZZ_BUILD_FLAGS_wheel_ops := --no-trace-compares
# c_abi decodes its input with remainders, not comparisons: tracing them cost a third of
# its time under ASan and found nothing the coverage counters did not.
FUZZ_BUILD_FLAGS_c_abi := --no-trace-compares
# Nor does it keep stack frames alive after they return (ASan's fake stacks, another fifth
# of its time): every pointer it hands the library is a local of a call that outlives it.
# sized_structs and threads, which pass the same out-pointers, keep the check.
FUZZ_ASAN_OPTIONS_c_abi := detect_stack_use_after_return=0
# threads runs the C contract test (wheels with threads, sleeps) once per input: about ten
# inputs a second; its own watchdog is off, the timeout is its hang detector. The test
# prints a line per input to stdout: closed.
FUZZ_TIMEOUT_threads := 60
FUZZ_RUN_FLAGS_threads := -close_fd_mask=1
FUZZ_MAX_LEN := 512
# make fuzz-long: each target to FUZZ_LONG_RUNS inputs or FUZZ_LONG_SECONDS, whichever first.
FUZZ_LONG_SECONDS ?= 3600
FUZZ_LONG_RUNS ?= 10000000
# make test: three and a half minutes of fuzzing in all. A target whose regressions
# fuzz/regressions/KNOWN lists (a bug fixed elsewhere, found in seconds) leaves these lists
# until the fix merges; CI then only replays its seeds and regressions on stable.
FUZZ_CI_SECONDS ?= 60
FUZZ_CI_TARGETS := wheel_ops c_abi
# The narrower targets: FUZZ_CI_SHORT_SECONDS each (their seeds and regressions replay too).
FUZZ_CI_SHORT_SECONDS ?= 22
FUZZ_CI_SHORT_TARGETS := sized_structs export_recreate virtual_clock durable_store
# CI builds every target alike, under ASan without comparison tracing (c_abi's build):
# one build of the dependencies instead of three, each five minutes or more on 2 CPUs.
FUZZ_CI_BUILD := $(foreach t,$(FUZZ_CI_TARGETS) $(FUZZ_CI_SHORT_TARGETS),FUZZ_SANITIZER_$t=address \
	FUZZ_BUILD_FLAGS_$t=--no-trace-compares)
.PHONY: fuzz fuzz-long fuzz-tools test-fuzz $(addprefix fuzz-,$(FUZZ_TARGETS)) \
	$(addprefix fuzz-long-,$(FUZZ_TARGETS))

# The environment of a fuzz build of target $1: under AddressSanitizer, the C and C++ that
# the cc crate compiles (bundled SQLite, libFuzzer itself) stay uninstrumented, as
# libFuzzer is in clang's own -fsanitize=fuzzer builds: the cc crate would otherwise pass
# the Rust side's -fsanitize=address on to them, slowing every input down and the first
# build of SQLite by many minutes. Neither is the code under test (the C of the threads
# target is compiled by fuzz/build.rs, instrumented). Then the target's own ASan options.
fuzz_env = $(if $(filter address,$(call fuzz_sanitizer,$1)),CFLAGS=-fno-sanitize=address \
	CXXFLAGS=-fno-sanitize=address) \
	$(if $(FUZZ_ASAN_OPTIONS_$1),ASAN_OPTIONS=$(FUZZ_ASAN_OPTIONS_$1):$$ASAN_OPTIONS)
# cargo-fuzz's build options for target $1: its sanitizer, a target directory named by that
# sanitizer and its flags (targets built alike share one; different flags in one would
# rebuild every dependency at each switch, e.g. fuzz/target/address-no-trace-compares), its
# own flags.
fuzz_sanitizer = $(or $(FUZZ_SANITIZER_$1),address)
fuzz_build = -s $(call fuzz_sanitizer,$1) \
	--target-dir fuzz/target/$(call fuzz_sanitizer,$1)$(subst $(eval) ,,$(patsubst --%,-%,$(FUZZ_BUILD_FLAGS_$1))) \
	$(FUZZ_BUILD_FLAGS_$1)
# libFuzzer's options for target $1 (but the run length).
fuzz_options = -max_len=$(FUZZ_MAX_LEN) -timeout=$(or $(FUZZ_TIMEOUT_$1),$(FUZZ_TIMEOUT)) \
	-print_final_stats=1 $(FUZZ_RUN_FLAGS_$1)

fuzz-tools:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked

fuzz: $(addprefix fuzz-,$(FUZZ_TARGETS))

$(addprefix fuzz-,$(FUZZ_TARGETS)): fuzz-%: fuzz-tools
	@mkdir -p fuzz/corpus/$*
	@echo "fuzz: $* for $(FUZZ_SECONDS) s"
	$(call fuzz_env,$*) $(CARGO) +$(FUZZ_TOOLCHAIN) fuzz run $(call fuzz_build,$*) $* \
		fuzz/corpus/$* fuzz/seeds/$* -- \
		-max_total_time=$(FUZZ_SECONDS) $(call fuzz_options,$*)

# Each target in turn to FUZZ_LONG_RUNS inputs or FUZZ_LONG_SECONDS, its corpus minimized,
# a line per target with the inputs run, inputs a second and coverage.
fuzz-long: $(addprefix fuzz-long-,$(FUZZ_TARGETS))

$(addprefix fuzz-long-,$(FUZZ_TARGETS)): fuzz-long-%: fuzz-tools
	$(call fuzz_env,$*) fuzz/long.sh "$(CARGO) +$(FUZZ_TOOLCHAIN) fuzz" $* "$(call fuzz_build,$*)" \
		"-max_total_time=$(FUZZ_LONG_SECONDS) -runs=$(FUZZ_LONG_RUNS) $(call fuzz_options,$*)"

# CI: FUZZ_CI_SECONDS per target of FUZZ_CI_TARGETS and FUZZ_CI_SHORT_SECONDS per target of
# FUZZ_CI_SHORT_TARGETS on nightly (test-fuzz-nightly), then the stable replay of the seeds
# and the regressions (but those fuzz/regressions/KNOWN lists; test-fuzz-replay); without
# nightly, only the replay. make test runs the two parts apart: the nightly one builds and
# runs in fuzz/target alone, beside the suites that use target/ (the Makefile's lanes).
.PHONY: test-fuzz-nightly test-fuzz-replay
test-fuzz: test-fuzz-nightly test-fuzz-replay

test-fuzz-nightly:
	@if $(CARGO) +$(FUZZ_TOOLCHAIN) --version >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory $(addprefix fuzz-,$(FUZZ_CI_TARGETS)) FUZZ_SECONDS=$(FUZZ_CI_SECONDS) \
			$(FUZZ_CI_BUILD) && \
		$(MAKE) --no-print-directory $(addprefix fuzz-,$(FUZZ_CI_SHORT_TARGETS)) \
			FUZZ_SECONDS=$(FUZZ_CI_SHORT_SECONDS) $(FUZZ_CI_BUILD) || exit 1; \
	else \
		echo "test-fuzz: skipped: no nightly toolchain; replaying seeds and regressions on stable"; \
	fi
	@git diff --quiet -- fuzz/Cargo.lock || { echo "test-fuzz: fuzz/Cargo.lock changed: commit the lock the build wrote"; exit 1; }

test-fuzz-replay:
	$(CARGO) test --release $(RUST_TESTED) --test wheel_ops_replay --test c_abi_replay \
		--test virtual_clock_replay --test sized_structs_replay --test export_recreate_replay \
		--test durable_store_replay

TEST_TARGETS += test-fuzz-nightly test-fuzz-replay

# ThreadSanitizer over the runtime's semantic and stress tests (nightly with rust-src: std
# is rebuilt instrumented). Thread leaks are not reported: the process-wide default runtime
# lives until exit by design. Not in TEST_TARGETS: its first build takes minutes.
.PHONY: test-tsan
TSAN_TARGET := x86_64-unknown-linux-gnu

test-tsan:
	@if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src'; then \
		echo "test-tsan: skipped: needs the nightly toolchain with rust-src"; \
	else \
		RUSTFLAGS="-Zsanitizer=thread" TSAN_OPTIONS="report_thread_leaks=0 halt_on_error=1" \
		CARGO_TARGET_DIR=$(CURDIR)/target/tsan $(CARGO) +nightly test -Zbuild-std \
			--target $(TSAN_TARGET) --release -p timerwheel-core --test runtime --test drop_in_callback; \
	fi
