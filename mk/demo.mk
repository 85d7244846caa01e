# The billing simulation (examples/billing, C through include/timerwheel.h) and the short
# examples per language (examples/<lang>/) that README quotes.
.PHONY: demo-billing demo-durable test-demo test-examples

DEMO_BUILD := build/demo
DEMO_SRC := $(wildcard examples/billing/*.c)
DEMO_CFLAGS := -std=c11 -Wall -Wextra -Werror -pthread -g -Iinclude
DEMO_LINK := -L$(TW_LIBDIR) -ltimerwheel -Wl,-rpath,$(TW_LIBDIR)
# The billing demo's --restart-at saves to SQLite (mk/deps.sh: sqlite3).
SQLITE_LIBS := $(shell pkg-config --libs sqlite3 2>/dev/null || echo -lsqlite3)
DEMO_SHORT := --sessions 5000 --duration 3 --period 200 --idle 600 --events 5000

$(DEMO_BUILD):
	mkdir -p $@

$(DEMO_BUILD)/billing: $(DEMO_SRC) examples/billing/billing.h $(TW_HEADER) lib | $(DEMO_BUILD)
	$(call need,pkg-config sqlite3)
	$(CC) $(DEMO_CFLAGS) -O2 $(DEMO_SRC) -o $@ $(DEMO_LINK) $(SQLITE_LIBS)

$(DEMO_BUILD)/billing.asan: $(DEMO_SRC) examples/billing/billing.h $(TW_HEADER) lib | $(DEMO_BUILD)
	$(call need,pkg-config sqlite3)
	$(CC) $(DEMO_CFLAGS) -O1 $(C_SANITIZE) $(DEMO_SRC) -o $@ $(DEMO_LINK) $(SQLITE_LIBS)

# BILLING_ARGS passes flags through, e.g. make demo BILLING_ARGS="--sessions 50000" (or
# "--metrics-port 9464" to scrape it while it runs). The figures of each second go to
# $(DEMO_CSV); when the bench virtualenv has matplotlib (mk/bench.mk), their picture
# (lateness, workers, backlog) goes next to it.
BENCH_VENV ?= $(CURDIR)/.venv-bench
DEMO_CSV := $(DEMO_BUILD)/billing.csv
DEMO_PNG := $(DEMO_BUILD)/billing.png
# Draws $(1) into $(2) when matplotlib is there, else says how to get it.
demo_plot = if $(BENCH_VENV)/bin/python -c 'import matplotlib' 2>/dev/null; then \
	  $(BENCH_VENV)/bin/python examples/billing/plot.py $(1) $(2); \
	else echo "no picture of the run: matplotlib is in $(BENCH_VENV) (make $(BENCH_VENV)/.ready)"; fi
demo-billing: $(DEMO_BUILD)/billing
	$(DEMO_BUILD)/billing --csv $(DEMO_CSV) $(BILLING_ARGS)
	@$(call demo_plot,$(DEMO_CSV),$(DEMO_PNG))

# --durable: the timers in a durable store, the accounts and the fires' tokens in a ledger
# of their own (build/demo/durable.db and .ledger); --crash-at kills the run once at a random
# moment within DEMO_CRASH_S seconds and starts it again from the files; check_demo.py
# --durable then checks the ledger (every due charge exactly once, no idle timeout lost).
DEMO_DURABLE := --sessions 10000 --duration 10 --period 1000 --idle 3000 --events 3000
DEMO_CRASH_S ?= 6
demo-durable: $(DEMO_BUILD)/billing
	$(PYTHON) examples/billing/check_demo.py --durable $(DEMO_BUILD)/billing \
	  $(DEMO_BUILD)/durable.db $(DEMO_CRASH_S) $(DEMO_DURABLE) $(BILLING_ARGS)

# A short run natively as an operator watches it (check_demo.py: the metrics endpoint
# fetched while it runs, a labelled line and a CSV row a second, and the picture when
# matplotlib is there), the same with a restart half way (saved to SQLite, re-executed
# with --resume, serving metrics before and after), a --durable run killed once and picked
# up from its files, then a shorter restart run under ASan + UBSan; each must pass its
# checks.
DEMO_ASAN := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
test-demo: $(DEMO_BUILD)/billing $(DEMO_BUILD)/billing.asan
	$(PYTHON) examples/billing/check_demo.py $(DEMO_BUILD)/billing $(DEMO_BUILD)/test.csv \
	  $(DEMO_SHORT)
	@$(call demo_plot,$(DEMO_BUILD)/test.csv,$(DEMO_BUILD)/test.png)
	$(DEMO_BUILD)/billing $(DEMO_SHORT) --restart-at 1.5 --metrics-port 0
	$(PYTHON) examples/billing/check_demo.py --durable $(DEMO_BUILD)/billing \
	  $(DEMO_BUILD)/test-durable.db 2 $(DEMO_SHORT)
	$(DEMO_ASAN) $(DEMO_BUILD)/billing.asan --sessions 2000 --duration 2 --period 200 \
	  --idle 600 --events 2000 --restart-at 1

TEST_TARGETS += test-demo

# The examples README quotes, built as a user would (C through the header, C++ through the
# wrapper, Python in the project's virtualenv, Go with the binding's module) and run, so
# that they never rot.
test-examples: lib | $(DEMO_BUILD)
	$(PYTHON) examples/check_readme.py
	$(CC) -std=c11 -Wall -Wextra -Werror -pthread -Iinclude examples/c/hello.c \
	  -o $(DEMO_BUILD)/hello-c $(DEMO_LINK)
	$(DEMO_BUILD)/hello-c
	$(CXX) -std=c++17 -Wall -Wextra -Werror -pthread -Iinclude -Ibindings/cpp \
	  examples/cpp/hello.cpp -o $(DEMO_BUILD)/hello-cpp $(DEMO_LINK)
	$(DEMO_BUILD)/hello-cpp
ifneq ($(wildcard mk/python.mk),)
	$(MAKE) -s python-install
	$(VENV)/bin/python examples/python/hello.py
	$(VENV)/bin/python examples/python/session_asyncio.py
endif
ifneq ($(wildcard mk/go.mk),)
	$(MAKE) -s go-toolchain
	cd examples/go && $(GO) vet . && $(GO) run .
endif

TEST_TARGETS += test-examples
