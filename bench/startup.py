"""How long `capstan serve` takes to answer its first request, beside a bare aiohttp server in the same run.

Capstan's promise for tests is a server that starts in under a second. Each start is a new process
(`capstan serve --http-port P --grpc-port 0`), timed from the exec to the first 200 from GET /version,
polled every 5 ms:

    python -m bench.startup [--quick] [--only fresh,restart,no-bytecode-cache]

  fresh              on an empty data directory: the store is created and bootstrapped (the default
                     namespaces, the kubernetes Service) before the server listens.
  restart            on the data directory of an earlier start.
  no-bytecode-cache  `fresh` with PYTHONDONTWRITEBYTECODE=1 and an empty PYTHONPYCACHEPREFIX: no
                     bytecode is read or written, so every module (the standard library's too) is
                     compiled at each start; the worst case, for context (no goal). A sandbox that only
                     sets PYTHONDONTWRITEBYTECODE compiles Capstan's own modules at each start.

The other starts run with cached bytecode, as on a machine where Python writes it (the first start
after an install writes it: one untimed start does that first). The ceiling beside each figure is a
bare aiohttp app answering GET /version in a process started the same way: what Python, aiohttp and
the process itself cost before any of Capstan. Each figure is the median of the rounds.

Stdout is one JSON line per figure (see bench/_util.py); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench._util import CEILING, at_most, context, emit, note

CAPSTAN = Path(sys.executable).with_name("capstan")
START_GOAL = at_most(1.0, " s")
CONTEXT = context("context")
POLL = 0.005  # seconds between GET /version attempts
TIMEOUT = 30.0  # seconds before a start counts as failed
CEILING_APP = """
import sys
from aiohttp import web
async def version(request):
    return web.json_response({"major": "1", "minor": "32"})
app = web.Application()
app.router.add_get("/version", version)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
"""
WORKLOADS = ("fresh", "restart", "no-bytecode-cache")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def environment(root: Path, *, bytecode: bool) -> dict[str, str]:
    """The servers' environment: bytecode cached as usual, or none read nor written (an empty cache prefix)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not bytecode:
        empty = root / "no-bytecode"
        empty.mkdir(exist_ok=True)
        env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=str(empty))
    return env


def timed_start(argv: Callable[[int], list[str]], env: dict[str, str]) -> float:
    """Seconds from exec to the first 200 from GET /version; the process is stopped before returning."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        started = time.perf_counter()
        proc = subprocess.Popen(argv(port), env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            while time.perf_counter() - started < TIMEOUT:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/version", timeout=1) as response:
                        if response.status == 200:
                            return time.perf_counter() - started
                except OSError:  # not listening yet (URLError, a reset, a timeout)
                    pass
                if proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"the server exited with {proc.returncode}: {log.read()[-2000:]!r}")
                time.sleep(POLL)
            raise RuntimeError(f"no answer from GET /version within {TIMEOUT} s")
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def capstan(data_dir: Path) -> Callable[[int], list[str]]:
    return lambda port: [str(CAPSTAN), "serve", "--insecure", "--data-dir", str(data_dir),
                         "--bind-address", "127.0.0.1", "--http-port", str(port), "--grpc-port", "0"]


def ceiling(port: int) -> list[str]:
    return [sys.executable, "-c", CEILING_APP, str(port)]


def measure(workload: str, rounds: int, root: Path) -> None:
    bytecode = workload != "no-bytecode-cache"
    env = environment(root, bytecode=bytecode)
    timed_start(capstan(root / "warm"), env)  # writes the bytecode cache (or proves the server starts)
    times, ceilings = [], []
    for i in range(rounds):
        data_dir = root / f"{workload}-{i}"
        if workload == "restart":
            timed_start(capstan(data_dir), env)
        times.append(timed_start(capstan(data_dir), env))
        ceilings.append(timed_start(ceiling, env))
    context: dict[str, Any] = {"rounds": rounds, "bytecode_cache": bytecode, "worst_s": round(max(times), 3)}
    emit(workload, "capstan", "seconds", round(statistics.median(times), 3), START_GOAL if bytecode else CONTEXT,
         **context)
    emit(workload, "ceiling", "seconds", round(statistics.median(ceilings), 3), CEILING, rounds=rounds,
         bytecode_cache=bytecode)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round each, for a smoke run")
    parser.add_argument("--only", default=",".join(WORKLOADS),
                        help=f"comma-separated workloads (default: all of {','.join(WORKLOADS)})")
    args = parser.parse_args(argv)
    unknown = set(args.only.split(",")) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {','.join(WORKLOADS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rounds = 1 if args.quick else 5
    with tempfile.TemporaryDirectory(prefix="capstan-bench-startup-") as root:
        for workload in dict.fromkeys(args.only.split(",")):
            note(f"{workload} ...")
            measure(workload, rounds, Path(root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
