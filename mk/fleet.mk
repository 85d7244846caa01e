# The fleet store (timerwheel-fleet: durable timers on PostgreSQL, shards under leases).
# Its tests start private PostgreSQL clusters on loopback ports (mk/deps.sh: postgresql).
.PHONY: test-fleet bench-fleet fleet-test-server

# FLEET_TEST selects tests by name, e.g. make test-fleet FLEET_TEST=kill
FLEET_TEST ?=

test-fleet:
	$(call need,postgresql)
	$(CARGO) test --release -p timerwheel-fleet -- $(FLEET_TEST)

TEST_TARGETS += test-fleet

# Created + fired per second by three fleet-node processes against a plain SKIP LOCKED job
# table on the same server (mixed, then adds alone and fires alone), then the failover time
# after kill -9 (TTL 2 s). Outside make test.
bench-fleet:
	$(call need,postgresql)
	$(CARGO) build --release -q -p timerwheel-fleet --bins --examples
	$(CARGO) run --release -q -p timerwheel-fleet --example bench_fleet -- $(BENCH_ARGS)

# A node's peak memory with 100 thousand, 1 million and 10 million timers in the store
# (--quick: a tenth), each stage's against the first's. Outside make test: minutes.
.PHONY: bench-fleet-memory
bench-fleet-memory:
	$(call need,postgresql)
	$(CARGO) build --release -q -p timerwheel-fleet --bins --examples
	$(CARGO) run --release -q -p timerwheel-fleet --example fleet_memory -- $(BENCH_ARGS)

# The billing simulation on three fleet-node processes against a private PostgreSQL, one
# SIGKILLed mid-run, the ledger checked (every charge that fell due charged exactly once,
# the taken-over charges within TTL + 1 s). DEMO_FLEET_ARGS: --sessions N --seconds S.
DEMO_FLEET_ARGS ?=

.PHONY: demo-fleet
demo-fleet:
	$(call need,postgresql)
	$(CARGO) run --release -q -p timerwheel-fleet --example demo_fleet -- $(DEMO_FLEET_ARGS)

# A private cluster for the bindings' tests (make test-python, check-go): prints its
# connection string, runs SQL from stdin, stops at its end (src/bin/fleet-test-server.rs).
fleet-test-server:
	$(CARGO) build --release -q -p timerwheel-fleet --bin fleet-test-server
