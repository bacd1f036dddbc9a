"""The startup benchmark runs end to end at --quick sizes and prints what it promises.

It asserts the shape of the output, never the speed: timing belongs to real runs on a
known machine, not to CI.
"""

from __future__ import annotations

import pytest

from tests.bench.quick import run_quick


@pytest.mark.parametrize(("only", "cached", "secure", "goal"), [
    ("fresh", True, True, "<=1 s"),
    ("restart", True, True, "<=0.7 s"),
    ("fresh-insecure", True, False, "<=1 s"),
    ("restart-insecure", True, False, "<=0.7 s"),
    ("no-bytecode-cache", False, True, "(context)"),
])
def test_each_start_reports_capstan_and_its_ceiling(only: str, cached: bool, secure: bool, goal: str) -> None:
    lines = run_quick("bench.startup", "--only", only)
    assert [(line["op"], line["impl"]) for line in lines] == [(only, "capstan"), (only, "ceiling")]
    for line in lines:
        assert line["metric"] == "seconds" and line["seconds"] > 0
        assert line["bytecode_cache"] is cached and line["rounds"] == 1
    assert lines[0]["goal"] == goal and lines[0]["secure"] is secure
