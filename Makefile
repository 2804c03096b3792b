# Athanor: `make demo` runs the nightly job on demo data; `make test` runs the tests.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
DEMO_DATE ?= 2026-11-30
# uv installs the locked set into the venv: on this machine 20 s against pip's 90 s for the
# same 258 packages (the same versions: both install requirements.lock). Compiled to bytecode
# at install, as pip does: where PYTHONDONTWRITEBYTECODE is set, nothing else ever writes it,
# and every Airflow process would compile its imports again (make test: 15.5 -> 18.5 min).
UV_VERSION := 0.13.9
UV := $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python

.PHONY: demo test test-fast airflow bench lint format docs clean system-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(BIN)/uv: $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# Runtime: pinned by requirements.lock (Airflow's constraint URLs are not reachable).
$(VENV)/.installed: $(BIN)/uv requirements.txt requirements.lock pyproject.toml
	$(UV) -r requirements.txt -c requirements.lock
	$(UV) --no-deps -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(UV) -r requirements-dev.txt -c requirements.lock
	touch $@

demo: $(VENV)/.installed
	DEMO_DATE=$(DEMO_DATE) scripts/demo.sh

# System packages the real-server tests use: Chromium for the report, and the Ceph
# RadosGW .debs (unpacked, not installed) for the S3-compatible server.
system-deps:
	scripts/system-deps.sh

# Server-free tests on every core, one file per worker (--dist loadfile: a module's fixtures
# are built once); see the markers in pyproject.toml.
PARALLEL := -n auto --dist loadfile

# Two passes at once. The integration and realdata tiers on three workers, a module to a worker
# (--dist loadfile: its module-scoped servers start once), in file order rather than by test
# count (the longest modules hold few tests); their servers wait on start-ups and polls part
# of the time. Beside them, the server-free tests (unit and slow) on every core at a lower
# priority (nice), so they take the CPU the servers leave without stretching their modules
# (sampled over a whole run: both cores busy throughout, docs/architecture.md). The server
# pass's output (its log) comes last, closed by the slowest 15.
SERVER_LOG := .cache/test-servers.log
test: $(VENV)/.installed-dev system-deps
	source scripts/airflow-env.sh && mkdir -p .cache && status=0 \
	  && { $(BIN)/pytest -q -n 3 --dist loadfile --no-loadscope-reorder -m "integration or realdata" --durations=15 > $(SERVER_LOG) 2>&1 & servers=$$!; } \
	  && { nice -n 15 $(BIN)/pytest -q $(PARALLEL) -m "not integration and not realdata" --durations=5 || status=$$?; } \
	  && echo "== the integration and realdata tiers, run beside the above ($(SERVER_LOG)):" \
	  && { wait $$servers || status=$$?; } \
	  && cat $(SERVER_LOG) && exit $$status

# The unit tier: no network, no apt, no server, nothing marked slow.
test-fast: $(VENV)/.installed-dev
	$(BIN)/pytest -q $(PARALLEL) -m "not integration and not realdata and not slow" --durations=10

airflow: $(VENV)/.installed
	scripts/airflow-standalone.sh

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/run_all.py

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: $(VENV)/.installed-dev
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

docs: $(VENV)/.installed
	$(BIN)/python -m athanor.warehouse.docs

clean:
	rm -rf landing warehouse reports quarantine artifacts .airflow test-artifacts
