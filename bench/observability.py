"""What operating Capstan costs a request: the metrics every request records, and OpenTelemetry tracing off,
configured but not sampling, and sampling every request.

A core started as `capstan serve` starts it (server.startup.app.start_core, RBAC, a static token of a user in
system:masters), requests sent to its guard back to back on one event loop (no HTTP, no gRPC: the figure is the
core's CPU per request, each request in the server span the gateway would open for it). Each round runs every case
in a fresh process, on a fresh core and store (tracing is decided when a core starts; a process that ran other
cores before carries their heap, which moved figures by tens of µs):

  off         no tracing: the anchor (metrics are always recorded)
  unsampled   --tracing-config-file with samplingRatePerMillion 0: each request's server span decides not to
              sample, and nothing below it is made
  sampled     samplingRatePerMillion 1000000: every span recorded and handed to an exporter that discards it
              (what leaves the process is the OTLP exporter's batch thread, not measured here)

for ConfigMap creates and gets. Beside them, `record` prints the µs one request's metrics take to record
(apiserver_request_* of a call, authentication, the two admission steps and one admission plugin), timed
alone with timeit.

    python -m bench.observability [--quick] [--rounds 3] [--requests 2000]

Stdout is one JSON line per figure (bench/_util.py): µs of the process's CPU per request, the median over rounds,
and `added_us` beside the anchor of the same run; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from prometheus_client import CollectorRegistry

from bench._util import CEILING, emit, note
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.config import SecurityConfig
from server.machinery import apimetrics, tracing
from server.machinery.credentials import Credentials
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

TOKEN = "bench-token-0123456789abcdef0123456789abcdef"
CASES = ("off", "unsampled", "sampled")
PATH = core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="default")


class _Discard:
    """A SpanExporter that drops what it is given."""

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


async def _requests(running: RunningCore, credentials: Credentials, prefix: str, count: int) -> tuple[float, float]:
    """µs of this process's CPU per create and per get, `count` of each back to back."""
    guard = running.guard
    creates = [core_pb2.CreateRequest(path=PATH, object=core_pb2.RawObject(
        encoding=core_pb2.ENCODING_JSON, data=orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": f"{prefix}-{i}"}, "data": {"a": "1"}}))) for i in range(count)]
    gets = [core_pb2.GetRequest(path=core_pb2.ResourcePath(version="v1", resource="configmaps", namespace="default",
                                                           name=f"{prefix}-{i}")) for i in range(count)]
    started = time.process_time()
    for create in creates:
        with tracing.span("KubernetesAPI", server=True):  # the request's span, as the gateway opens it
            await guard.create(create, credentials)
    created = time.process_time()
    for get in gets:
        with tracing.span("KubernetesAPI", server=True):
            await guard.get(get, credentials)
    done = time.process_time()
    return (created - started) / count * 1e6, (done - created) / count * 1e6


async def _case(root: Path, case: str, count: int) -> tuple[float, float]:
    if case != "off":
        tracing.configure(tracing.TracingConfig(sampling_rate_per_million=1_000_000 if case == "sampled" else 0),
                          _Discard())
    tokens = root / "tokens.csv"
    tokens.write_text(f'{TOKEN},bench,uid-bench,"system:masters"\n')
    store = await LmdbStore.open(root / f"lmdb-{case}", StoreOptions(sync=False, compact_interval=0))
    running = await start_core(store, listen="127.0.0.1", grpc_port=0,
                               security=SecurityConfig(token_auth_file=tokens), namespace_controllers=False)
    credentials = Credentials(token=TOKEN, source_ip="127.0.0.1", request_uri="/api/v1/namespaces/default/configmaps")
    try:
        await _requests(running, credentials, "warm", max(count // 10, 1))
        return await _requests(running, credentials, "timed", count)
    finally:
        await running.stop()
        await store.close()
        tracing.shutdown()
        shutil.rmtree(root / f"lmdb-{case}", ignore_errors=True)


def _recording_us() -> float:
    """µs to record one write's metrics: a request, an authentication, two admission steps and one plugin."""
    requests = apimetrics.RequestMetrics(CollectorRegistry())
    labels = apimetrics.request_labels("create", "", "v1", "configmaps", "", "default", "")

    def record() -> None:
        requests.observe(labels, 201, 0.001)
        apimetrics.authenticated("success", 0.0001)
        apimetrics.admission_step("admit", "CREATE", False, 0.0001)
        apimetrics.admission_step("validate", "CREATE", False, 0.0001)
        apimetrics.admission_controller("LimitRanger", "admit", "CREATE", False, 0.0001)

    number = 20_000
    return min(timeit.repeat(record, number=number, repeat=5)) / number * 1e6


def _in_process(case: str, count: int) -> tuple[float, float]:
    """One case in a process of its own: (µs per create, µs per get)."""
    done = subprocess.run([sys.executable, "-m", "bench.observability", "--case", case, "--requests", str(count)],
                          capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1])
    create_us, get_us = done.stdout.split()
    return float(create_us), float(get_us)


def run(rounds: int, count: int) -> int:
    figures: dict[tuple[str, str], list[float]] = {}
    for round_ in range(rounds):
        for case in CASES:
            create_us, get_us = _in_process(case, count)
            figures.setdefault(("create configmaps", case), []).append(create_us)
            figures.setdefault(("get configmaps", case), []).append(get_us)
            note(f"round {round_ + 1} {case}: {create_us:.0f} µs/create, {get_us:.0f} µs/get")
    for op in ("create configmaps", "get configmaps"):
        anchor = statistics.median(figures[(op, "off")])
        for case in CASES:
            median = statistics.median(figures[(op, case)])
            emit(op, case, "us_per_request", median, CEILING, added_us=round(median - anchor, 1),
                 rounds=[round(f, 1) for f in figures[(op, case)]])
    emit("record metrics", "capstan", "us_per_write", _recording_us(), CEILING)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.observability", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 200 requests a case")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)  # one case, in this process
    args = parser.parse_args(argv)
    if args.case:
        root = Path(tempfile.mkdtemp(prefix="capstan-observability-"))
        try:
            create_us, get_us = asyncio.run(_case(root, args.case, args.requests))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(f"{create_us} {get_us}")
        return 0
    rounds, count = (1, 200) if args.quick else (args.rounds, args.requests)
    return run(rounds, count)


if __name__ == "__main__":
    sys.exit(main())
