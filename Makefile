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
	$(BIN)/capstan serve --data-dir ./data --listen 127.0.0.1 --http-port 8080 --grpc-port 50051

test: install lint typecheck
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check .

typecheck: install
	$(BIN)/mypy

bench: install
	$(BIN)/python -m bench.storage

clean:
	rm -rf $(VENV) build *.egg-info
