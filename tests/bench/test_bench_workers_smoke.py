"""The workers benchmark runs end to end at --quick sizes with wrk and prints what it promises.

It asserts the shape of the output and that every request succeeded, never the speed: timing belongs to real
runs on a known machine, not to CI.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.bench.quick import run_quick

pytestmark = pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed (Debian: wrk)")

OPS = ("get", "create", "update")


@pytest.fixture(scope="module")
def lines() -> list[dict[str, Any]]:
    return run_quick("bench.workers")


@pytest.mark.parametrize("op", OPS)
def test_each_workload_reports_both_servers_and_their_ratio(lines: list[dict[str, Any]], op: str) -> None:
    mine = [line for line in lines if line["op"] == op]
    assert [(line["impl"], line["metric"]) for line in mine] == [
        ("1 worker", "per_s"), ("2 workers", "per_s"),
        ("2 workers / 1 worker", "rate_ratio"), ("2 workers / 1 worker", "cpu_ratio")]
    for line in mine[:2]:
        assert line["errors"] == 0 and line["per_s"] > 0 and line["server_cpu_us_per_req"] > 0
    assert mine[2]["goal"] == (">=1.7x" if op == "get" else ">=1.5x") and mine[3]["goal"] == "<=1.15x"
