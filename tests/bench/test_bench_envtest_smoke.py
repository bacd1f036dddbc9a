"""The envtest benchmark runs end to end at --quick sizes and prints every step; it asserts the shape, never the
speed."""

from __future__ import annotations

from tests.bench.quick import run_quick


def test_reports_each_step_of_envtests_start() -> None:
    lines = run_quick("bench.envtest")
    assert [line["op"] for line in lines] == ["etcd", "help-probe", "kube-apiserver", "first-request",
                                              "envtest-start", "serve"]
    assert all(line["metric"] == "seconds" and line["seconds"] > 0 and line["rounds"] == 1 for line in lines)
    assert lines[2]["goal"] == "<=2 s"
