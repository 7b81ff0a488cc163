# Every target installs what it needs first (scripts/setup.sh is idempotent).
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: setup run test bench lint clean
setup:
	@bash scripts/setup.sh

run: setup
	$(PY) -m topologies.demo

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

# the standard benchmark set (bench/standard.py): JSON under bench/results/standard/, then docs/results.md,
# its plots and README.md's results table (bench/report.py); QUICK=1: smaller sizes, about 10 minutes
bench: setup
	$(PY) bench/standard.py $(if $(QUICK),--quick)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(PY) scripts/function_length.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
