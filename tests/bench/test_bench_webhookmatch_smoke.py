"""The webhook-matching benchmark runs end to end at --quick sizes and prints a figure for every case beside its
anchor. It asserts the shape of the output, never the speed."""

from __future__ import annotations

from tests.bench.quick import run_quick

EXPECTED = {("create configmaps", case) for case in ("none", "exact", "equivalent", "condition", "authorizer")} | {
    ("create hpas", case) for case in ("none", "converted")}


def test_every_case_reports_beside_its_anchor() -> None:
    lines = run_quick("bench.webhookmatch")
    assert {(line["op"], line["impl"]) for line in lines} == EXPECTED
    for line in lines:
        assert line["metric"] == "us_per_create" and line["us_per_create"] > 0
        assert len(line["rounds"]) == 1
        if line["impl"] == "none":
            assert line["added_us"] == 0
