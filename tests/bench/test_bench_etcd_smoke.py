"""The etcd benchmark runs end to end at --quick sizes, against real etcd and capstan processes, and prints what it
promises: every layout's figure for every workload, each process's CPU on etcd, and the ratios beside the goals.

It asserts the shape of the output, never the speed: timing belongs to real runs on a known machine, not to CI.
"""

from __future__ import annotations

from typing import Any

from tests.bench.quick import run_quick

OPS = ("create", "get", "update", "list-json", "list-protobuf", "list-json-rv0", "list-protobuf-rv0", "watch",
       "list-floor")
CACHED = ("list-json-rv0", "list-protobuf-rv0")  # held to their own bound, not to kube's recorded figures
RATIO_OPS = tuple(op for op in OPS if op != "list-floor" and op not in CACHED)
LAYOUTS = ("capstan-lmdb", "capstan-etcd", "scaleout-etcd")
RATIOS = ("capstan-etcd/capstan-lmdb", "capstan-etcd/kube-apiserver")
METRICS = {"create": "creates_per_s", "get": "gets_per_s", "update": "updates_per_s", "list-json": "ms_per_list",
           "list-protobuf": "ms_per_list",
           "list-json-rv0": "ms_per_list", "list-protobuf-rv0": "ms_per_list", "watch": "p99_ms",
           "list-floor": "ms_per_range"}
PROCESSES = {
    "capstan-lmdb": set(),  # one process: no split
    "capstan-etcd": {"etcd", "serve"},
    "scaleout-etcd": {"etcd-0", "etcd-1", "etcd-2", "core-0", "core-1", "gateway-0", "gateway-1"},
}


def test_every_layout_reports_every_op_with_its_processes_and_the_ratios() -> None:
    lines = run_quick("bench.etcd")
    figures = {(line["op"], line["impl"]): line for line in lines if line["impl"] in LAYOUTS}
    assert sorted(figures) == sorted((op, impl) for op in OPS for impl in LAYOUTS)
    for (op, impl), line in figures.items():
        assert line["metric"] == METRICS[op]
        if (op, impl) == ("list-floor", "capstan-lmdb"):
            assert (line["ms_per_range"], line["ok"], line["na"]) == (None, None, "not on etcd")
            continue
        assert "error" not in line, line
        assert line[line["metric"]] >= 0
        assert isinstance(line["ok"], bool)
        if op == "list-floor":
            assert line["keys"] >= 120  # QUICK's population, read by one etcd Range
        else:
            assert set(line.get("cpu_us_per_req_by_process", {})) == PROCESSES[impl], line
        if impl == "capstan-etcd" and op in RATIO_OPS:
            assert "kube-apiserver" in line["goal"]
        if impl == "capstan-etcd" and op in CACHED:
            assert line["goal"] == "<=35 ms"
    for watch in (figures["watch", impl] for impl in LAYOUTS):
        assert watch["deliveries"] == watch["watchers"] * watch["writes"]
    ratios = {(line["op"], line["impl"]): line for line in lines if line["impl"] in RATIOS}
    assert sorted(ratios) == sorted((op, impl) for op in RATIO_OPS for impl in RATIOS)
    vs_kube: dict[str, Any] = {op: ratios[op, "capstan-etcd/kube-apiserver"] for op in RATIO_OPS}
    assert {op for op, line in vs_kube.items() if "na" in line} == {"list-json", "list-protobuf"}  # not 5,000
    for line in ratios.values():
        assert ("na" in line) == (line["ratio"] is None) == (line["ok"] is None)
    assert vs_kube["create"]["ratio_by_lmdb_over_kube"] > 0 and vs_kube["get"]["kube_apiserver"] == 1_306
