# The project's own upkeep: `make help`, the generated figures of the docs, and the check
# that make test leaves the working tree as it found it.
.PHONY: help check-help readme-figures check-figures tree-record check-clean

# One line per target (mk/help.txt), then the targets it does not list.
help:
	@mk/help.sh

# Fails when mk/help.txt names a target that no make file declares.
check-help:
	@mk/help.sh check

# The benchmark figures quoted in README.md, the bindings' READMEs and docs/benchmarks.md
# lie between <!-- report:NAME --> markers, filled from the committed bench/report.md by
# bench/sections.py: readme-figures refills them after a `make bench`, check-figures fails
# when one differs from what the report gives.
readme-figures:
	$(PYTHON) bench/sections.py --write

check-figures:
	@cd bench && PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -m unittest -q test_sections
	@$(PYTHON) bench/sections.py --check

# The working tree's state when make test begins (git status and a hash of each file it
# lists); check-clean compares the tree with it, or with a clean tree when none was recorded.
TREE_STATE := $(CURDIR)/build/tree-state
tree-record:
	@mk/tree-state.sh record $(TREE_STATE)

check-clean:
	@mk/tree-state.sh check $(TREE_STATE)

CHECK_TARGETS += check-help check-figures
TEST_TARGETS += check-help check-figures
