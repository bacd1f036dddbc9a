"""The storage benchmark runs end to end at --quick sizes and prints what it promises.

It asserts the shape of the output, never the speed: timing belongs to real runs on a
known machine, not to CI.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.bench.quick import REPO_ROOT, run_quick

OPS = ("create", "get", "list", "watch", "scale")
IMPLS = ("capstan", "raw-lmdb")


def run_bench(*args: str) -> list[dict[str, Any]]:
    lines = run_quick("bench.storage", *args)
    for line in lines:
        assert line[line["metric"]] >= 0
        assert isinstance(line["goal"], str)
        assert isinstance(line["ok"], bool)
    return lines


def test_every_op_reports_the_store_and_its_raw_ceiling() -> None:
    lines = run_bench()
    assert {(line["op"], line["impl"]) for line in lines} == {(op, impl) for op in OPS for impl in IMPLS} | {
        ("follow", "capstan"), ("follow", "capstan-watched")}
    follows = [line for line in lines if line["op"] == "follow"]
    assert [(line["impl"], line["value_bytes"]) for line in follows] == [
        (impl, size) for size in (1024, 65536) for impl in ("capstan", "capstan-watched")]
    assert all(line["ok"] and line["events_read"] == (line["writes"] if line["impl"] == "capstan-watched" else 0)
               for line in follows)


def test_only_runs_the_named_ops() -> None:
    lines = run_bench("--only", "get,list")
    assert {line["op"] for line in lines} == {"get", "list"}


def test_sigterm_removes_the_scratch_directory(tmp_path: Path) -> None:
    """A run stopped with SIGTERM (a CI timeout, `kill`) leaves nothing behind in the temporary directory."""
    bench = subprocess.Popen([sys.executable, "-m", "bench.storage", "--only", "scale", "--scale-keys", "10000000"],
                             cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env={**os.environ, "TMPDIR": str(tmp_path)})
    assert bench.stderr is not None
    assert b"scale ..." in bench.stderr.readline()
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob("capstan-bench-*/scale/*")):  # the store is being built
        assert time.monotonic() < deadline and bench.poll() is None
        time.sleep(0.05)
    bench.send_signal(signal.SIGTERM)
    assert bench.wait(30) == 143
    assert list(tmp_path.iterdir()) == []
