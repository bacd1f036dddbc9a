"""The startup benchmark runs end to end at --quick sizes and prints what it promises.

It asserts the shape of the output, never the speed: timing belongs to real runs on a
known machine, not to CI.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.bench.quick import run_quick

STARTS = ("fresh", "restart", "fresh-insecure", "restart-insecure", "no-bytecode-cache")
IMPLS = ("capstan", "capstan --workers 1", "ceiling")  # as users run it, as one process, and bare aiohttp


@pytest.fixture(scope="module")
def lines() -> list[dict[str, Any]]:
    """One run of every start (each start is its own process already: one run costs the bench's start once)."""
    return run_quick("bench.startup", "--only", ",".join(STARTS))


def test_every_start_in_order(lines: list[dict[str, Any]]) -> None:
    assert [(line["op"], line["impl"]) for line in lines] == [
        (start, impl) for start in STARTS for impl in IMPLS]


@pytest.mark.parametrize(("only", "cached", "secure", "goal"), [
    ("fresh", True, True, "<=1 s"),
    ("restart", True, True, "<=0.7 s"),
    ("fresh-insecure", True, False, "<=1 s"),
    ("restart-insecure", True, False, "<=0.7 s"),
    ("no-bytecode-cache", False, True, "(context)"),
])
def test_each_start_reports_capstan_and_its_ceiling(lines: list[dict[str, Any]], only: str, cached: bool,
                                                    secure: bool, goal: str) -> None:
    mine = [line for line in lines if line["op"] == only]
    assert [line["impl"] for line in mine] == list(IMPLS)
    for line in mine:
        assert line["metric"] == "seconds" and line["seconds"] > 0 and line["rounds"] == 1
    assert mine[0]["bytecode_cache"] is mine[2]["bytecode_cache"] is cached
    assert mine[0]["goal"] == goal and mine[0]["secure"] is secure
