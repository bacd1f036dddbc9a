"""The startup benchmark runs end to end at --quick sizes and prints what it promises.

It asserts the shape of the output, never the speed: timing belongs to real runs on a
known machine, not to CI.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.bench.quick import run_quick

STARTS = ("fresh", "restart", "fresh-insecure", "restart-insecure", "no-bytecode-cache")
IMPLS = ("capstan", "capstan --workers 1", "ceiling")  # as users run it, as one process, and bare aiohttp
KUBE = "kube-apiserver + etcd"  # beside the secure starts, when a binary is given
KUBE_APISERVER = os.environ.get("KUBE_APISERVER", "")


@pytest.fixture(scope="module")
def lines() -> list[dict[str, Any]]:
    """One run of every start (each start is its own process already: one run costs the bench's start once),
    without a kube-apiserver binary."""
    return run_quick("bench.startup", "--only", ",".join(STARTS), "--kube-apiserver", "/nonexistent/kube-apiserver")


def test_every_start_in_order(lines: list[dict[str, Any]]) -> None:
    assert [(line["op"], line["impl"]) for line in lines] == [
        (start, impl) for start in STARTS for impl in (*IMPLS, *((KUBE,) if start in ("fresh", "restart") else ()))]


@pytest.mark.parametrize("start", ["fresh", "restart"])
def test_kube_apiserver_without_a_binary_is_not_applicable(lines: list[dict[str, Any]], start: str) -> None:
    [line] = [line for line in lines if line["op"] == start and line["impl"] == KUBE]
    assert line["seconds"] is None and line["ok"] is None
    assert line["na"] == "no kube-apiserver binary at '/nonexistent/kube-apiserver'"


def test_kube_apiserver_starts_beside_capstan() -> None:
    """With a binary, kube-apiserver and its etcd start fresh and again on their data, each timed to /readyz."""
    if not KUBE_APISERVER:
        pytest.skip("no kube-apiserver binary: set $KUBE_APISERVER to run it")
    found = run_quick("bench.startup", "--only", "fresh,restart", "--kube-apiserver", KUBE_APISERVER)
    kube = [line for line in found if line["impl"] == KUBE]
    assert [line["op"] for line in kube] == ["fresh", "restart"]
    for line in kube:
        assert line["seconds"] >= line["version_s"] > 0 and line["rounds"] == 1


@pytest.mark.parametrize(("only", "cached", "secure", "goal"), [
    ("fresh", True, True, "<=1 s"),
    ("restart", True, True, "<=0.7 s"),
    ("fresh-insecure", True, False, "<=1 s"),
    ("restart-insecure", True, False, "<=0.7 s"),
    ("no-bytecode-cache", False, True, "(context)"),
])
def test_each_start_reports_capstan_and_its_ceiling(lines: list[dict[str, Any]], only: str, cached: bool,
                                                    secure: bool, goal: str) -> None:
    mine = [line for line in lines if line["op"] == only and line["impl"] != KUBE]
    assert [line["impl"] for line in mine] == list(IMPLS)
    for line in mine:
        assert line["metric"] == "seconds" and line["seconds"] > 0 and line["rounds"] == 1
    assert mine[0]["bytecode_cache"] is mine[2]["bytecode_cache"] is cached
    assert mine[0]["goal"] == goal and mine[0]["secure"] is secure
