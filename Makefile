# The two commands that matter: `make serve` and `make test`. Both work on a fresh
# machine: they create .venv and install Capstan into it first.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: serve test install lint typecheck protos check-protos bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

serve: install
	$(BIN)/capstan serve --data-dir ./data

test: install lint typecheck check-protos
	$(BIN)/python -m pytest -n auto

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
