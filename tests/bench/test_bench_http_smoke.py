"""The HTTP benchmark runs end to end at --quick sizes, against real server processes, and prints what it promises.

It asserts the shape of the output, never the speed: timing belongs to real runs on a
known machine, not to CI.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.bench.quick import run_quick

OPS = ("create", "get", "update", "merge-patch", "apply", "list-json", "list-protobuf", "list-metadata", "crd",
       "crd-create", "pods-list-json", "pods-list-protobuf", "watch")
IMPLS = ("capstan", "capstan-scaleout", "capstan-1gw-grpc", "kmock", "ceiling")
METRICS = {"create": "creates_per_s", "get": "gets_per_s", "update": "updates_per_s",
           "merge-patch": "patches_per_s", "apply": "patches_per_s",
           "list-json": "ms_per_list", "list-protobuf": "ms_per_list", "list-metadata": "ms_per_list",
           "watch": "p99_ms",
           "crd": "ms_until_served", "crd-create": "creates_per_s",
           "pods-list-json": "ms_per_list", "pods-list-protobuf": "ms_per_list"}
JSON_ONLY = {"kmock", "ceiling"}


def run_bench(*args: str) -> list[dict[str, Any]]:
    lines = run_quick("bench.http", *args)
    for line in lines:
        assert line["metric"] == METRICS[line["op"]]
        assert isinstance(line["goal"], str)
        if "na" in line:  # a figure that does not apply: null, neither met nor missed
            assert (line[line["metric"]], line["ok"]) == (None, None)
        else:
            assert line[line["metric"]] >= 0
            assert isinstance(line["ok"], bool)
    return lines


def test_every_op_reports_every_server() -> None:
    lines = run_bench()
    assert sorted((line["op"], line["impl"]) for line in lines) == sorted(
        (op, impl) for op in OPS for impl in IMPLS)
    for line in lines:
        if line["impl"] != "kmock":  # kmock's failures are data (it has no PUT); ours and the ceiling's are not
            assert "error" not in line, line
        if line["impl"].startswith("capstan"):
            assert line["goal"] != "(ceiling)"
    na = {(line["op"], line["impl"]) for line in lines if "na" in line}
    assert na == {(op, impl) for op in ("list-protobuf", "list-metadata", "crd", "crd-create", "pods-list-json",
                                        "pods-list-protobuf") for impl in JSON_ONLY}
    scaleout = next(line for line in lines if (line["op"], line["impl"]) == ("get", "capstan-scaleout"))
    assert set(scaleout["cpu_us_per_req_by_process"]) == {"core", "gateway"}
    watches = [line for line in lines if line["op"] == "watch" and line["impl"] != "kmock"]
    for watch in watches:
        assert watch["deliveries"] == watch["watchers"] * watch["writes"]


def test_only_and_impls_pick_workloads_and_servers() -> None:
    lines = run_bench("--only", "get,watch", "--impls", "capstan,ceiling")
    assert {(line["op"], line["impl"]) for line in lines} == {
        (op, impl) for op in ("get", "watch") for impl in ("capstan", "ceiling")}


KUBE_APISERVER = os.environ.get("KUBE_APISERVER", "")


@pytest.mark.parametrize(("impl", "binary", "processes"), [
    ("capstan-secure", "", {"serve"}),
    ("kube-apiserver", KUBE_APISERVER, {"kube-apiserver", "etcd"}),
], ids=["capstan-secure", "kube-apiserver"])
def test_secure_layouts_serve_with_a_bearer_token(impl: str, binary: str, processes: set[str]) -> None:
    """capstan-secure (HTTPS, a TokenRequest token) and kube-apiserver over its etcd (a static token) answer
    the workloads, their CPU reported by process."""
    if impl == "kube-apiserver" and not binary:
        pytest.skip("no kube-apiserver binary: set $KUBE_APISERVER to run it")
    lines = run_bench("--only", "create,get", "--impls", impl, "--kube-apiserver", binary)
    assert {(line["op"], line["impl"]) for line in lines} == {("create", impl), ("get", impl)}
    for line in lines:
        assert "error" not in line and "na" not in line, line
        assert set(line.get("cpu_us_per_req_by_process", {"serve": 0})) == processes


def test_kube_apiserver_without_a_binary_is_not_applicable() -> None:
    lines = run_bench("--only", "create,get,watch", "--impls", "kube-apiserver",
                      "--kube-apiserver", "/nonexistent/kube-apiserver")
    assert {(line["op"], line["na"]) for line in lines} == {
        (op, "no kube-apiserver binary at '/nonexistent/kube-apiserver'") for op in ("create", "get", "watch")}
