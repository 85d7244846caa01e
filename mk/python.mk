# The Python module (python/): a virtualenv at .venv with maturin and pytest, the package
# installed into it with `pip install ./python`, its pytest suite and its benchmark.
.PHONY: venv zig python-install test-python bench-python wheel sdist test-python-dist

VENV_PY := $(VENV)/bin/python
PIP_INSTALL := $(VENV_PY) -m pip install -q --disable-pip-version-check --root-user-action=ignore

# Created once; later runs only check that the tools are there (mypy: the stubs' type checks
# in python/tests/test_typing.py; prometheus_client: the tests of timerwheel.prometheus, the
# `prometheus` extra).
VENV_TOOLS := maturin pytest mypy prometheus_client
venv:
	@test -x $(VENV)/bin/maturin -a -x $(VENV)/bin/pytest -a -x $(VENV)/bin/mypy && \
	  $(VENV_PY) -c 'import prometheus_client' 2>/dev/null || { \
		{ test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV); } && \
		$(PIP_INSTALL) $(VENV_TOOLS); }

# Builds the abi3 extension (release) with the venv's maturin and installs the package
# (with timerwheel.Fleet, the cargo feature `fleet`, on by default; docs/fleet.md).
python-install: venv
	PATH="$(VENV)/bin:$$PATH" $(PIP_INSTALL) --no-build-isolation ./python

# PYTEST_ARGS picks tests, e.g. make test-python PYTEST_ARGS="-k never_early".
test-python: python-install fleet-test-server
	$(VENV_PY) -m pytest python/tests -q $(PYTEST_ARGS)

bench-python: python-install
	$(VENV_PY) python/bench/bench.py $(if $(filter --quick,$(BENCH_ARGS)),--n 100000 --asyncio-n 20000 --touches 200000)

# zig from PyPI (the ziglang package, in .venv): the linker maturin uses for the wheel.
zig: venv
	@$(VENV_PY) -c 'import ziglang' 2>/dev/null || $(PIP_INSTALL) ziglang

# An abi3 wheel (CPython 3.9+) in dist/ for manylinux2014 (glibc 2.17 and later: RHEL 7 and
# 8, Ubuntu 18.04 and 20.04, ...), whatever glibc this machine has: zig links the extension
# against glibc 2.17's symbols, and maturin checks the libraries and symbol versions it
# uses against the tag; the licences are inside.
WHEEL_TAG := manylinux2014
wheel: zig
	PATH="$(VENV)/bin:$$PATH" $(VENV)/bin/maturin build -m python/Cargo.toml --out $(CURDIR)/dist \
	  --zig --compatibility $(WHEEL_TAG)

# The source distribution in dist/ (the Rust sources of the module and the core, licences).
sdist: venv
	$(VENV)/bin/maturin sdist -m python/Cargo.toml --out $(CURDIR)/dist

# As a user of the wheel: installs it into a fresh virtualenv with no Rust toolchain on PATH
# and runs the pytest suite against the installed package (tests/python-dist/run.sh).
test-python-dist: wheel sdist fleet-test-server
	tests/python-dist/run.sh

CHECK_TARGETS += test-python
TEST_TARGETS += test-python test-python-dist
BENCH_TARGETS += bench-python
