"""The encryption benchmark runs end to end at --quick sizes and prints a figure for every provider.

It asserts the shape of the output, never the speed: timing belongs to real runs on a known machine.
"""

from __future__ import annotations

from tests.bench.quick import run_quick

IMPLS = {"none", "identity", "aescbc", "aesgcm", "secretbox", "kms"}


def test_every_provider_reports_its_write_read_and_cipher_cost() -> None:
    lines = run_quick("bench.encryption")
    for op in ("write", "read"):
        assert {line["impl"] for line in lines if line["op"] == op} == IMPLS
    assert {line["impl"] for line in lines if line["op"] == "cipher"} == IMPLS - {"none"}
    assert all(isinstance(line["ok"], bool) and "goal" in line for line in lines)


def test_only_runs_the_named_workloads() -> None:
    lines = run_quick("bench.encryption", "--only", "read", "--impls", "none,aesgcm")
    assert {(line["op"], line["impl"]) for line in lines} == {("read", "none"), ("read", "aesgcm")}
