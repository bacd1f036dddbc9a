"""The nodes benchmark runs end to end at --quick sizes and prints every figure it promises (never its speed)."""

from __future__ import annotations

from tests.bench.quick import run_quick


def test_every_figure_is_reported() -> None:
    lines = run_quick("bench.nodes")
    assert [(line["op"], line["metric"]) for line in lines] == [
        ("idle-cpu", "ms_cpu_per_node_per_s"), ("startup", "extra_s"), ("pods-started", "pods_per_s"),
        ("heartbeats", "oldest_lease_s"),
        ("pods-started", "cpu_ms_per_pod")]
    heartbeats = next(line for line in lines if line["op"] == "heartbeats")
    assert heartbeats["not_ready_nodes"] == 0
