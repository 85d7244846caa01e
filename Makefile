# timerwheel — top-level entry points. Each interface adds its targets in mk/<name>.mk,
# appending to TEST_TARGETS / BENCH_TARGETS.
SHELL := /bin/bash
CARGO ?= cargo
PYTHON ?= python3
VENV := $(CURDIR)/.venv
TEST_TARGETS :=
BENCH_TARGETS :=

.PHONY: all test bench demo fmt lint
all: build

include mk/rust.mk
include $(filter-out mk/rust.mk,$(sort $(wildcard mk/*.mk)))

# The full tier, what CI runs (.ci/run): the system packages (mk/deps.mk), then every suite.
test: deps $(TEST_TARGETS)
	@echo "make test: all suites passed ($(TEST_TARGETS))"

# Every bench of BENCH_TARGETS, through bench/report.py (mk/bench.mk), which runs each one and
# writes bench/report.md; `make <target>` still runs one alone.
bench: bench-report

# The prepaid billing simulation in C (mk/demo.mk).
demo: demo-billing
