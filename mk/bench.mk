# One benchmark report: bench/report.py runs every target of BENCH_TARGETS (each interface
# appends its own), collects their JSON lines and writes bench/report.md with the W3 plot
# bench/w3_lateness.png. matplotlib lives in the bench virtualenv .venv-bench only.
# BENCH_QUICK=1 for a short run (the targets get BENCH_ARGS=--quick).
.PHONY: bench-runtime bench-executor bench-billing bench-billing-slow bench-throughput bench-report bench-durable

BENCH_VENV := $(CURDIR)/.venv-bench

# W1-W8 through the runtime (Rust API); W1-W5 against a same-shape heap timer and tokio's
# DelayQueue.
bench-runtime:
	$(CARGO) run --release -q -p timerwheel-core --example bench_runtime -- $(BENCH_ARGS)

# W6-W8 alone, the executor's workloads (slow callbacks, bursts, a mixed load), and their
# table: a short run for the executor's before/after (BENCH_ARGS=--quick shortens W6 only).
bench-executor:
	$(CARGO) run --release -q -p timerwheel-core --example bench_runtime -- --only W6,W7,W8 $(BENCH_ARGS)

# The billing demo (mk/demo.mk) at ten times its default load (about 500-850k callbacks a
# second), once with no blocking call (--slow 0: the pool stays at the CPU count) and once
# with the default slow share (0.2 % of charging calls block 5 ms).
BILLING_LOAD_ARGS ?= --sessions 2000000 --duration 20 --events 200000
bench-billing:
	$(MAKE) --no-print-directory demo BILLING_ARGS="$(BILLING_LOAD_ARGS) --slow 0 $(BILLING_ARGS)"
	$(MAKE) --no-print-directory demo BILLING_ARGS="$(BILLING_LOAD_ARGS) $(BILLING_ARGS)"

# The billing demo with a large slow share: 5 % of the charging calls block 20 ms. Its
# report ends with the lateness line to compare before and after. These sessions make
# about 5,000 charges a second (9,000 at the peak): 5 workers' worth of blocking, which a
# pool of 16 can carry.
BILLING_SLOW_ARGS ?= --sessions 12000 --events 6000 --slow 0.05 --slow-ms 20
bench-billing-slow:
	$(MAKE) --no-print-directory demo BILLING_ARGS="$(BILLING_SLOW_ARGS) $(BILLING_ARGS)"

# W9, throughput, in one command: timerwheel beside tokio's multi-threaded runtime (Rust
# API), then beside Go's time.AfterFunc (Go binding).
bench-throughput:
	$(CARGO) run --release -q -p timerwheel-core --example bench_runtime -- --only W9 $(BENCH_ARGS)
	$(MAKE) --no-print-directory bench-go GO_BENCH_ARGS="-workloads W9 -runs 1 $(GO_BENCH_ARGS)"

$(BENCH_VENV)/.ready:
	$(call need,venv)
	$(PYTHON) -m venv --clear $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q matplotlib
	touch $@

bench-report: $(BENCH_VENV)/.ready
	$(BENCH_VENV)/bin/python bench/report.py --targets "$(BENCH_TARGETS)" $(if $(BENCH_QUICK),--quick)

BENCH_TARGETS += bench-runtime

# Durable timers on the SQLite store (docs/durable.md): async changes/s, sync add latency,
# acknowledged fires/s, restore time, each beside the same work in memory.
bench-durable:
	$(CARGO) run --release -q -p timerwheel-core --features sqlite --example bench_durable -- $(BENCH_ARGS)

BENCH_TARGETS += bench-durable
