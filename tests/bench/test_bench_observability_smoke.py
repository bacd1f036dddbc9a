"""The observability benchmark runs end to end at --quick sizes and prints a figure for every case beside its
anchor. It asserts the shape of the output, never the speed."""

from __future__ import annotations

from tests.bench.quick import run_quick

EXPECTED = {(op, case) for op in ("create configmaps", "get configmaps") for case in ("off", "unsampled", "sampled")
            } | {("record metrics", "capstan")}


def test_every_case_reports_beside_its_anchor() -> None:
    lines = run_quick("bench.observability")
    assert {(line["op"], line["impl"]) for line in lines} == EXPECTED
    for line in lines:
        assert line[line["metric"]] > 0
        if line["impl"] == "off":
            assert line["added_us"] == 0
