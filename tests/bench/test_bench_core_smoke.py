"""The core benchmark runs end to end at --quick sizes and prints what it promises.

It asserts the shape of the output, never the speed: timing belongs to real runs on a
known machine, not to CI.
"""

from __future__ import annotations

from typing import Any

from tests.bench.quick import run_quick

EXPECTED = {
    ("grpc-get", "capstan"), ("grpc-get", "echo"), ("grpc-get", "capstan/echo"),
    ("grpc-create", "capstan"), ("grpc-create", "echo"), ("grpc-create", "capstan/echo"),
    ("get", "capstan-inprocess"), ("create", "capstan-inprocess"), ("create", "store-floor"),
    ("watch", "capstan-inprocess"),
}
METRICS = {"capstan": "calls_per_s", "echo": "calls_per_s", "capstan/echo": "ratio"}


def run_bench(*args: str) -> list[dict[str, Any]]:
    lines = run_quick("bench.core", *args)
    for line in lines:
        assert line[line["metric"]] >= 0
        assert isinstance(line["goal"], str)
        assert isinstance(line["ok"], bool)
    return lines


def test_every_op_reports_the_core_and_its_ceiling() -> None:
    lines = run_bench()
    assert {(line["op"], line["impl"]) for line in lines} == EXPECTED
    for line in lines:
        if line["op"].startswith("grpc-"):
            assert line["metric"] == METRICS[line["impl"]]
    assert [line["callers"] for line in lines if line["op"] == "get"] == [1, 64]
    creates = {line["impl"]: line for line in lines if line["op"] == "create"}
    assert creates["store-floor"]["count"] == creates["capstan-inprocess"]["count"]
    assert creates["store-floor"]["goal"] == "(ceiling)"
    watch = next(line for line in lines if line["op"] == "watch")
    assert watch["metric"] == "p99_ms"
    assert watch["deliveries"] == watch["watchers"] * watch["writes"]


def test_only_runs_the_named_ops() -> None:
    lines = run_bench("--only", "get,watch")
    assert {line["op"] for line in lines} == {"get", "watch"}
