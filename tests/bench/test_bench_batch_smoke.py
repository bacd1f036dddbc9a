"""The batch benchmark runs end to end at --quick sizes and prints what it promises. It asserts the shape of the
output, never the speed."""

from __future__ import annotations

from tests.bench.quick import run_quick


def test_every_size_reports_controllers_and_floor() -> None:
    lines = run_quick("bench.batch")
    assert sorted((line["impl"], line["completions"]) for line in lines) == [
        ("controllers", 1), ("controllers", 10), ("floor", 1), ("floor", 10)]
    for line in lines:
        assert line["op"] == "job-complete" and line["seconds"] > 0 and line["ok"] is True
