"""The scheduler benchmark runs end to end at --quick sizes and prints what it promises. It asserts the shape of
the output, never the speed."""

from __future__ import annotations

from tests.bench.quick import run_quick


def test_each_workload_reports_the_scheduler_its_floor_and_the_decision() -> None:
    lines = run_quick("bench.scheduler")
    assert [(line["op"], line["impl"]) for line in lines] == [
        (workload, impl) for workload in ("plain", "spread") for impl in ("scheduler", "floor", "decide")]
    for line in lines:
        assert line[line["metric"]] > 0 and line["ok"] is True
        if line["impl"] != "decide":
            assert line["metric"] == "pods_per_s" and line["cpu_us_per_pod"] > 0
