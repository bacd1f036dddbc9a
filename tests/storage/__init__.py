"""Tests of the storage layer: one contract suite run against every backend, plus LMDB's own."""
