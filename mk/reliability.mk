# Reliability: the soak, loom model checking, fuzzing.
.PHONY: soak test-soak

SOAK_SECONDS ?= 60

# A million live timers under random churn for SOAK_SECONDS; fails on any lost timer or drop.
soak:
	$(CARGO) run --release -q -p timerwheel-core --example soak -- $(SOAK_SECONDS)

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
