"""The stateful controllers' benchmark runs end to end at --quick sizes and prints what it promises. It asserts
the shape of the output, never the speed."""

from __future__ import annotations

from tests.bench.quick import run_quick


def test_every_workload_reports_direct_and_controller() -> None:
    lines = run_quick("bench.stateful")
    assert [(line["op"], line["impl"]) for line in lines] == [
        (op, impl) for op in ("statefulset", "daemonset", "pvbinding") for impl in ("direct", "controller")]
    for line in lines:
        assert line["metric"] == "per_s" and line["per_s"] > 0 and line["count"] == 10
        if line["impl"] == "controller":
            assert line["share_of_direct"] > 0
