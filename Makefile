# timerwheel — top-level entry points. Each interface adds its targets in mk/<name>.mk,
# appending to TEST_TARGETS (make test), CHECK_TARGETS (make check), FMT_TARGETS (make fmt),
# LINT_TARGETS (make lint) and BENCH_TARGETS (make bench).
SHELL := /bin/bash
CARGO ?= cargo
PYTHON ?= python3
VENV := $(CURDIR)/.venv
TEST_TARGETS :=
CHECK_TARGETS :=
FMT_TARGETS :=
LINT_TARGETS :=
BENCH_TARGETS :=

.PHONY: all test test-suites check fmt lint bench demo
all: build

include mk/rust.mk
include $(filter-out mk/rust.mk,$(sort $(wildcard mk/*.mk)))

# The full tier, what CI runs (.ci/run): the system packages (mk/deps.mk), then every suite
# with sanitizers, valgrind, loom, fuzzing, the soak and the install routes; at the end,
# check-clean fails when the run changed a file git tracks or left one .gitignore misses.
# Each suite runs through timed-<suite> (a make of its own, one job at a time), which prints
# how long it took; the table at the end (mk/test-times.sh) lists them slowest first against
# the 30-minute budget, even when a suite failed.
#
# The suites run in two lanes at once (make -j2), each lane in its order, each suite's output
# in one block: TEST_LANE_2 holds those that use neither target/ (whose libtimerwheel.so
# cargo replaces at each build of the FFI crate, while the C, C++, Go and demo programs of
# lane 1 load it) nor .venv; they build in directories of their own (fuzz/target,
# target/loom, the Go cache) or build nothing, but for the fleet crate in target/, which
# links no FFI crate (test-fleet, and fleet-test-server, with which test-go-module's fleet
# tests start PostgreSQL). Much of lane 1 waits on sleeps, or runs on one CPU (valgrind, a
# single test thread); the fuzzers of lane 2 take one CPU each in turn.
TEST_TIMES := $(CURDIR)/build/test-times
TEST_LANE_2 = $(filter $(TEST_TARGETS),test-fuzz-nightly test-loom test-go-module test-fleet \
  check-help check-figures)
TEST_LANE_1 = $(filter-out $(TEST_LANE_2),$(TEST_TARGETS))

test:
	@mk/test-times.sh start $(TEST_TIMES)
	@$(MAKE) --no-print-directory tree-record timed-deps
	@$(MAKE) --no-print-directory -j2 --output-sync=recurse test-suites || \
	  { mk/test-times.sh summary $(TEST_TIMES); exit 1; }
	@mk/test-times.sh summary $(TEST_TIMES)
	@mk/tree-state.sh check $(TREE_STATE)
	@echo "make test: all suites passed ($(TEST_TARGETS))"

test-suites: $(addprefix timed-,$(TEST_TARGETS))

timed-%:
	@mk/test-times.sh run $(TEST_TIMES) $* $(MAKE) -j1 --no-print-directory $*

# Chains a lane ($(1)): each timed-<suite> waits for the one before it.
lane = $(if $(word 2,$(1)),$(eval timed-$(word 2,$(1)): | timed-$(word 1,$(1)))$(call lane,$(wordlist 2,$(words $(1)),$(1))))
$(call lane,$(TEST_LANE_1))
$(call lane,$(TEST_LANE_2))

# The fast tier, before every commit (a few minutes): formatting, lint, the Rust docs and
# tests, the header check, the C tests (plain), the C++ test, pytest and go test (no race
# detector) against this build.
check: $(CHECK_TARGETS)
	@echo "make check: passed ($(CHECK_TARGETS))"

# Formats the sources in place (Rust and Go; C, C++ and Python have no formatter here).
fmt: $(FMT_TARGETS)

# clippy and go vet, warnings as errors.
lint: $(LINT_TARGETS)

# Every bench of BENCH_TARGETS, through bench/report.py (mk/bench.mk), which runs each one and
# writes bench/report.md; `make <target>` still runs one alone.
bench: bench-report

# The prepaid billing simulation in C (mk/demo.mk).
demo: demo-billing
