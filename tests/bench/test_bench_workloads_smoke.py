"""The workloads benchmark runs end to end at --quick sizes and prints what it promises. It asserts the shape of
the output, never the speed."""

from __future__ import annotations

from tests.bench.quick import run_quick


def test_every_size_reports_controllers_floor_and_nodes() -> None:
    lines = run_quick("bench.workloads")
    assert sorted((line["impl"], line["replicas"]) for line in lines) == [
        ("controllers", 1), ("controllers", 10), ("floor", 1), ("floor", 10), ("nodes", 1), ("nodes", 10)]
    for line in lines:
        assert line["op"] == "deployment-available" and line["seconds"] > 0 and line["ok"] is True
