# Reliability: the soak, loom model checking, fuzzing.
.PHONY: soak test-soak

SOAK_SECONDS ?= 60

# A million live timers under random churn for SOAK_SECONDS; fails on any lost timer or drop.
soak:
	$(CARGO) run --release -q -p timerwheel-core --example soak -- $(SOAK_SECONDS)

test-soak:
	$(MAKE) --no-print-directory soak SOAK_SECONDS=10

TEST_TARGETS += test-soak
