# The system packages (mk/deps.sh, the one place that installs them): `make deps` installs
# what is missing and `make test` runs it first. A target that uses one of them starts with
# $(call need,NAME...), which fails, naming `make deps`, when one is missing.
.PHONY: deps

DEPS = GO="$(GO)" PYTHON="$(PYTHON)" mk/deps.sh
need = @$(DEPS) need $(1)

deps:
	@$(DEPS) install
