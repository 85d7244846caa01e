# The Python module (python/): a virtualenv at .venv with maturin and pytest, the package
# installed into it with `pip install ./python`, its pytest suite and its benchmark.
.PHONY: venv python-install test-python bench-python

VENV_PY := $(VENV)/bin/python
PIP_INSTALL := $(VENV_PY) -m pip install -q --disable-pip-version-check --root-user-action=ignore

# Created once; later runs only check that the tools are there.
venv:
	@test -x $(VENV)/bin/maturin -a -x $(VENV)/bin/pytest || { \
		$(PYTHON) -m venv $(VENV) && $(PIP_INSTALL) maturin pytest; }

# Builds the abi3 extension (release) with the venv's maturin and installs the package.
python-install: venv
	PATH="$(VENV)/bin:$$PATH" $(PIP_INSTALL) --no-build-isolation ./python

test-python: python-install
	$(VENV_PY) -m pytest python/tests -q

bench-python: python-install
	$(VENV_PY) python/bench/bench.py $(if $(filter --quick,$(BENCH_ARGS)),--n 100000 --asyncio-n 20000 --touches 200000)

TEST_TARGETS += test-python
BENCH_TARGETS += bench-python
