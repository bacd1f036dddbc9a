"""What several workers buy: `capstan serve --workers 1` beside `--workers N` under a load generator that uses
little CPU, so the server, not the client, has the machine's cores.

bench.http's client is a Python process; on a small machine it takes a core the servers would use, which hides
what a second worker adds. This benchmark drives each server with wrk (C, one thread, keep-alive connections;
Debian's `wrk` package), reports the server's CPU from /proc (the parent and every worker) and wrk's beside it:

    python -m bench.workers [--quick] [--workers 1,2] [--only get,create,update] [--seconds 8] [--connections 32]

  get      GET of one 1 KiB ConfigMap, over and over
  create   POST of a 1 KiB ConfigMap, each of a new name
  update   PUT of one of 100 1 KiB ConfigMaps (no resourceVersion: an unconditional update, as ConfigMaps allow)

Each server is `capstan serve --insecure --workers K` as served (fsync on), over its own data directory; the
rounds alternate between them, and each figure is the median of the rounds. For each K > 1 a ratio line gives
its rate and CPU per request against one worker's, with the goals of several workers on a 2-core machine: gets
at least 1.7 times one worker's, creates and updates 1.5 times, at no more CPU per request (+15% allowed: each
worker also applies the others' writes to its own informers and watch cache). The machine must be otherwise
idle for the rates to mean anything; CPU per request holds either way.

Stdout is one JSON line per figure (see bench/_util.py); progress goes to stderr. Without wrk on PATH the run
says so and exits 0 with no figure.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench._processes import Child, Children, tree_cpu_seconds
from bench._util import at_least, at_most, context, emit, note

OPS = ("get", "create", "update")
SERVING = re.compile(r"capstan serving: HTTP http://127\.0\.0\.1:(\d+)")
BLOB = "x" * 1024
OBJECTS = 100  # the ConfigMaps updates spread over
GOALS = {"get": 1.7, "create": 1.5, "update": 1.5}  # K workers' rate / one worker's, on 2 cores
CPU_SLACK = 1.15  # CPU per request of K workers may exceed one worker's by this much

# wrk's Lua: each request made by `request()`; `done()` prints the summary as one JSON line on stdout.
LUA_COMMON = r"""
local counter = 0
local body_of = function(name)
  return '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"' .. name .. '"},"data":{"blob":"' .. BLOB .. '"}}'
end
done = function(summary, latency, requests)
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"status_errors":%d,"socket_errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""
LUA = {
    "get": r"""
request = function()
  return wrk.format("GET", "/api/v1/namespaces/default/configmaps/bench-get")
end
""",
    "create": r"""
request = function()
  counter = counter + 1
  return wrk.format("POST", "/api/v1/namespaces/default/configmaps", {["Content-Type"] = "application/json"},
                    body_of(PREFIX .. counter))
end
""",
    "update": r"""
request = function()
  counter = counter + 1
  local name = "bench-upd-" .. (counter % OBJECTS)
  return wrk.format("PUT", "/api/v1/namespaces/default/configmaps/" .. name,
                    {["Content-Type"] = "application/json"}, body_of(name))
end
""",
}


@dataclass
class Server:
    workers: int
    child: Child
    port: int = 0
    figures: dict[str, list[dict[str, float]]] = field(default_factory=dict)

    @property
    def impl(self) -> str:
        return f"{self.workers} worker" + ("s" if self.workers > 1 else "")


def request(port: int, method: str, path: str, body: dict[str, object] | None = None) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        connection.request(method, path, body=payload, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"blob": BLOB}}


def start(children: Children, root: Path, workers: int) -> Server:
    child = children.start(f"serve-{workers}", "-m", "capstan", "serve", "--insecure", "--workers", str(workers),
                           "--data-dir", str(root / f"data-{workers}"), "--http-port", "0", "--grpc-port", "0")
    server = Server(workers, child)
    server.port = int(child.listening(SERVING))
    if workers > 1:  # each worker serves once the one before does
        child.listening(re.compile(rf"capstan serving: .* worker ({workers - 1}) pid"), timeout=120)
    assert request(server.port, "POST", "/api/v1/namespaces/default/configmaps", configmap("bench-get")) == 201
    for n in range(OBJECTS):
        assert request(server.port, "POST", "/api/v1/namespaces/default/configmaps",
                       configmap(f"bench-upd-{n}")) == 201
    return server


def run_wrk(wrk: str, root: Path, server: Server, op: str, seconds: float, connections: int,
            round_no: int) -> dict[str, float]:
    script = root / f"{op}-{server.workers}-{round_no}.lua"
    prefix = f"bench-{server.workers}-{round_no}-"
    script.write_text(f'local BLOB = "{BLOB}"\nlocal OBJECTS = {OBJECTS}\nlocal PREFIX = "{prefix}"\n'
                      + LUA_COMMON + LUA[op])
    before = tree_cpu_seconds(server.child.proc.pid)
    usage_before = os.times()
    done = subprocess.run([wrk, "-t1", f"-c{connections}", f"-d{seconds:g}s", "--latency", "-s", str(script),
                           f"http://127.0.0.1:{server.port}"], capture_output=True, text=True, timeout=seconds + 120)
    usage_after = os.times()
    server_cpu = tree_cpu_seconds(server.child.proc.pid) - before
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed: {done.stderr.strip()}")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    requests = max(1, summary["requests"])
    wrk_cpu = (usage_after.children_user + usage_after.children_system
               - usage_before.children_user - usage_before.children_system)
    return {"rate": summary["requests"] / (summary["duration_us"] / 1e6),
            "cpu_us": server_cpu / requests * 1e6, "client_cpu_us": wrk_cpu / requests * 1e6,
            "p50_ms": summary["p50_us"] / 1000, "p99_ms": summary["p99_us"] / 1000,
            "errors": summary["status_errors"] + summary["socket_errors"]}


def median(figures: list[dict[str, float]], key: str) -> float:
    return statistics.median(figure[key] for figure in figures)


def report(servers: Sequence[Server], ops: Sequence[str], rounds: int, seconds: float, connections: int) -> None:
    base = servers[0]
    for op in ops:
        for server in servers:
            figures = server.figures[op]
            errors = sum(figure["errors"] for figure in figures)
            emit(op, server.impl, "per_s", round(median(figures, "rate")), context("context"), correct=errors == 0,
                 rounds=rounds, seconds=seconds, connections=connections, errors=int(errors),
                 server_cpu_us_per_req=round(median(figures, "cpu_us")),
                 client_cpu_us_per_req=round(median(figures, "client_cpu_us")),
                 p50_ms=round(median(figures, "p50_ms"), 2), p99_ms=round(median(figures, "p99_ms"), 2))
        for server in servers:
            if server is base or base.workers != 1:
                continue
            ratio = median(server.figures[op], "rate") / max(1e-9, median(base.figures[op], "rate"))
            cpu = median(server.figures[op], "cpu_us") / max(1e-9, median(base.figures[op], "cpu_us"))
            emit(op, f"{server.impl} / 1 worker", "rate_ratio", round(ratio, 2), at_least(GOALS[op], "x"),
                 cpu_ratio=round(cpu, 2), cpu_goal=f"<= {CPU_SLACK}", cpu_ok=cpu <= CPU_SLACK,
                 cores=len(os.sched_getaffinity(0)))
            emit(op, f"{server.impl} / 1 worker", "cpu_ratio", round(cpu, 2), at_most(CPU_SLACK, "x"))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.workers", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short round, for a smoke run")
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    parser.add_argument("--only", default=",".join(OPS), help=f"comma-separated workloads of {','.join(OPS)}")
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds of load a round (default 8)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, alternating servers (default 3)")
    parser.add_argument("--connections", type=int, default=32, help="keep-alive connections (default 32)")
    args = parser.parse_args(argv)
    unknown = set(args.only.split(",")) - set(OPS)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {','.join(OPS)}")
    if args.quick:
        args.seconds, args.rounds = 1.0, 1
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    wrk = shutil.which("wrk")
    if wrk is None:
        note("wrk is not on PATH (Debian: apt install wrk): nothing measured")
        return 0
    ops = list(dict.fromkeys(args.only.split(",")))
    counts = [int(text) for text in args.workers.split(",")]
    with tempfile.TemporaryDirectory(prefix="capstan-bench-workers-") as name:
        root = Path(name)
        children = Children(root)
        try:
            servers = [start(children, root, count) for count in counts]
            note("servers: " + ", ".join(f"{s.impl} on {s.port} (pid {s.child.proc.pid})" for s in servers))
            for op in ops:
                for round_no in range(args.rounds):
                    ordered = servers if round_no % 2 == 0 else servers[::-1]
                    for server in ordered:
                        figure = run_wrk(wrk, root, server, op, args.seconds, args.connections, round_no)
                        server.figures.setdefault(op, []).append(figure)
                        note(f"{op} round {round_no + 1}: {server.impl}: {figure['rate']:.0f}/s, "
                             f"{figure['cpu_us']:.0f} µs CPU a request")
            report(servers, ops, args.rounds, args.seconds, args.connections)
        finally:
            children.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
