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

bench: setup
	$(PY) bench/softswitch_pps.py
	$(PY) bench/plan_scale.py
	$(PY) bench/allreduce.py

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(PY) scripts/function_length.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
