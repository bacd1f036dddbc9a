"""The ValidatingAdmissionPolicy benchmark runs end to end at --quick sizes and prints what it promises. It
asserts the shape of the output, never the speed."""

from __future__ import annotations

from tests.bench.quick import run_quick


def test_every_impl_reports_creates() -> None:
    lines = run_quick("bench.policies")
    assert [line["impl"] for line in lines] == ["none", "one-policy", "ten-policies", "params-variables"]
    for line in lines:
        assert (line["op"], line["metric"], line["ok"]) == ("create", "us_per_create", True)
        assert line["us_per_create"] > 0 and len(line["rounds"]) == 3
        assert ("added_us" in line) == ("added_cpu_us" in line) == (line["impl"] != "none")
        assert line["cpu_us_per_create"] > 0
