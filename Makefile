# The two commands that matter: `make serve` and `make test`. Both work on a fresh
# machine: they create .venv and install Capstan into it first.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: serve test install install-runtime lint typecheck protos check-protos check-floors bench clean

# `make serve` needs the runtime dependencies only; `make test` (and what it runs) the development ones too.
RUNTIME_STAMP := $(VENV)/.installed-runtime

$(RUNTIME_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME_STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP) $(RUNTIME_STAMP)

install-runtime: $(RUNTIME_STAMP)

install: $(STAMP)

serve: install-runtime
	$(BIN)/capstan serve --data-dir ./data

# Every dependency at its floor (.ci/minimum-versions.txt) in a second environment, Capstan installed from a
# built wheel as a user gets it, and a smoke subset: a core's gRPC create/get/list/watch (the README's example),
# the gateway in front of a core over gRPC (health, whose List grpcio-health-checking may lack), and the pytest
# plugin's fixtures in a project of the user's. Its tests come from this checkout; `capstan` runs the wheel.
FLOORS := build/floors-venv
SMOKE  := tests/cli/test_serve.py::test_readme_grpc_example_runs \
          tests/gateway/test_http_health.py::test_verbose_lists_every_check tests/plugin/test_user_project.py
check-floors:
	rm -rf $(FLOORS)
	$(PYTHON) -m venv $(FLOORS)
	$(FLOORS)/bin/python -m pip install --quiet --upgrade pip
	$(FLOORS)/bin/python -m pip install --quiet -c .ci/minimum-versions.txt '.[testing]' pytest-asyncio
	$(FLOORS)/bin/python -m pip list --format=freeze | grep -iE '^(grpcio|protobuf|kubernetes|pytest)'
	$(FLOORS)/bin/python -m pytest -p no:xdist $(SMOKE)

# Two test workers a usable core: a test spends about half its time waiting on the servers, kubectl and
# toolchains it starts, so one worker a core leaves the cores idle (on 2 cores the suite took 15.5 min with 2
# workers and 12.3 min with 4, the cores then ~94% busy). TEST_WORKERS=N overrides. Workers steal queued tests
# from each other (--dist worksteal): with xdist's default, one worker was left for minutes with a queue of
# slow end-to-end tests while the others sat idle.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(2 * len(os.sched_getaffinity(0)))')
# Bytecode is cached for the run even where the environment sets PYTHONDONTWRITEBYTECODE: the suite starts
# hundreds of Python processes (servers, benchmarks, clients), and without the cache each compiles every module
# it imports again (~0.3 s of CPU a server start, bench.startup's no-bytecode rows) and every worker rewrites
# every test module's asserts again.
test: install lint typecheck check-protos
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal

# Regenerate the Python in capstan/api and capstan/core from protos/ (buf lint first).
protos: install
	PATH="$(CURDIR)/$(BIN):$$PATH" protos/generate.sh

# Fails when the committed generated Python is stale (CI runs it via `make test`).
check-protos: install
	PATH="$(CURDIR)/$(BIN):$$PATH" protos/generate.sh --check

lint: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

bench: install
	$(BIN)/python -m bench.storage

clean:
	rm -rf $(VENV) build *.egg-info
