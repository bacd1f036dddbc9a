"""Worked examples of Capstan in use, each run by `make test` as its own tests."""
