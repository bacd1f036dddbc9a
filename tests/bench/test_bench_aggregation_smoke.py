"""The aggregation benchmark runs end to end at --quick sizes, against real server processes, and prints what it
promises. It asserts the shape of the output, never the speed."""

from __future__ import annotations

import socket

import pytest

from tests.bench.quick import run_quick


def _routable() -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.254", 9))
        except OSError:
            return False
        return not str(probe.getsockname()[0]).startswith("127.")


@pytest.mark.skipif(not _routable(), reason="no non-loopback address to put in Endpoints")
def test_every_op_reports_direct_and_proxied() -> None:
    lines = run_quick("bench.aggregation")
    assert sorted((line["op"], line["impl"]) for line in lines) == [
        ("get", "direct"), ("get", "proxied"), ("list", "direct"), ("list", "proxied")]
    for line in lines:
        assert line["metric"] == "ms_p50" and line["ms_p50"] > 0 and line["ok"] is True
        if line["impl"] == "proxied":
            assert line["server_cpu_us"] > 0 and "added_ms" in line
