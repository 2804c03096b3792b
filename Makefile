# Athanor: `make demo` runs the nightly job on demo data; `make test` runs the tests.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
DEMO_DATE ?= 2026-11-30
PIP := $(BIN)/pip install --quiet --disable-pip-version-check

.PHONY: demo test test-fast airflow bench lint format docs clean system-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Runtime: pinned by requirements.lock (Airflow's constraint URLs are not reachable).
$(VENV)/.installed: $(BIN)/python requirements.txt requirements.lock pyproject.toml
	$(PIP) -r requirements.txt -c requirements.lock
	$(PIP) --no-deps -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PIP) -r requirements-dev.txt -c requirements.lock
	touch $@

demo: $(VENV)/.installed
	DEMO_DATE=$(DEMO_DATE) scripts/demo.sh

# System packages the real-server tests use: Chromium for the report, and the Ceph
# RadosGW .debs (unpacked, not installed) for the S3-compatible server.
system-deps:
	scripts/system-deps.sh

test: $(VENV)/.installed-dev system-deps
	source scripts/airflow-env.sh && $(BIN)/pytest -q

# The unit tier: no network, no apt, no server (see the markers in pyproject.toml).
test-fast: $(VENV)/.installed-dev
	$(BIN)/pytest -q -m "not integration and not realdata"

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
