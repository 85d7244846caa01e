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
# Each suite runs through timed-<suite> (a make of its own), which prints how long it took;
# the table at the end (mk/test-times.sh) lists them slowest first against the 30-minute
# budget, even when a suite failed.
TEST_TIMES := $(CURDIR)/build/test-times
test:
	@mk/test-times.sh start $(TEST_TIMES)
	@$(MAKE) --no-print-directory test-suites || { mk/test-times.sh summary $(TEST_TIMES); exit 1; }
	@mk/test-times.sh summary $(TEST_TIMES)
	@echo "make test: all suites passed ($(TEST_TARGETS))"

test-suites: tree-record timed-deps $(addprefix timed-,$(TEST_TARGETS))
	@mk/tree-state.sh check $(TREE_STATE)

timed-%:
	@mk/test-times.sh run $(TEST_TIMES) $* $(MAKE) --no-print-directory $*

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
