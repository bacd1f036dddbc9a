"""Health checks and small requests under mixed load (issue 14): the latency of /readyz and of a GET of one
ConfigMap, side by side, while 2,000 clients hammer the server, 2,000 watchers sit idle and large LISTs
stream; and the server's memory before, at its peak and after the load has left.

    python -m bench.load [--duration 20] [--clients 2000] [--watchers 2000] [--objects 10000]

The server is `capstan serve --insecure` on loopback with its default limits, in a process of its own (its RSS
read from /proc). Each load runs in its own process so that no client starves another of CPU on the two shared
cores, and the probe's latency is the server's, not a crowded client's:
- the hammer: `--clients` aiohttp clients in one process, bench.overload's loop (nine GETs of a small ConfigMap
  for one merge PATCH, a 429 honoured by waiting Retry-After);
- the watchers: bench.watchers' holder, `--watchers` HTTP watches of a quiet namespace that read nothing;
- the lister: un-paged LISTs of `--objects` ~1 KiB ConfigMaps (bench.biglist's), one after another;
- the probe: every 50 ms a GET of /readyz, then a GET of one ConfigMap, each timed.
Goal lines (bench/_util.py's shape): p99 of both under 100 ms; RSS back within 20% of the baseline 10 s after
the load leaves. Figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from bench import biglist, overload, watchers
from bench._processes import Children
from bench._util import at_most, context, emit, note

LISTENING = re.compile(r"capstan serving: HTTP (http://\S+) gRPC (\S+)")
SMALL = f"{overload.CM}/bench-0"
PROBE_EVERY = 0.05  # seconds between probes
SETTLE = 10.0  # seconds after the load leaves before memory is read again


def percentile(values: list[float], q: float) -> float:
    return overload.percentile(values, q)


async def probe(url: str, duration: float) -> None:
    """The --probe process: /readyz then the small GET every PROBE_EVERY; prints both latency lists (ms)."""
    health: list[float] = []
    small: list[float] = []
    codes: dict[str, int] = {}
    deadline = time.monotonic() + duration
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        while time.monotonic() < deadline:
            for path, out in (("/readyz", health), (SMALL, small)):
                started = time.monotonic()
                try:
                    async with session.get(url + path) as resp:
                        await resp.read()
                        code = str(resp.status)
                except (TimeoutError, aiohttp.ClientError):
                    code = "error"
                out.append((time.monotonic() - started) * 1e3)
                codes[f"{path} {code}"] = codes.get(f"{path} {code}", 0) + 1
            await asyncio.sleep(PROBE_EVERY)
    print(json.dumps({"readyz": health, "get": small, "codes": codes}), flush=True)


async def lister(url: str, duration: float, objects: int) -> None:
    """The --lister process: un-paged LISTs back to back; prints how many and their latencies (ms)."""
    took: list[float] = []
    deadline = time.monotonic() + duration
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
        while time.monotonic() < deadline:
            took.append(await biglist.one_list(session, url, biglist.FORMS["json"], objects) * 1e3)
    print(json.dumps(took), flush=True)


async def hammer(url: str, clients: int, duration: float) -> None:
    """The --hammer process: bench.overload's clients; prints its figures."""
    print(json.dumps(await overload.load(url, clients, duration)), flush=True)


def rss(pid: int) -> float:
    return watchers.rss_of(pid)


async def prepare(url: str, objects: int) -> str:
    await overload.prepare(url)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        note(f"creating {objects} ConfigMaps for the large LIST ...")
        await biglist.fill(session, url, objects)
        return await watchers.current_revision(session, url)


def run(args: argparse.Namespace) -> int:
    root = Path(tempfile.mkdtemp(prefix="capstan-bench-load-"))
    children = Children(root)
    ok = True
    try:
        server = children.start("serve", "-m", "capstan", "serve", "--insecure", "--data-dir", str(root / "data"),
                                "--http-port", "0", "--grpc-port", "0", "--grpc-mtls-port", "-1")
        url = server.listening(LISTENING)
        revision = asyncio.run(prepare(url, args.objects))
        time.sleep(2.0)
        baseline = rss(server.proc.pid)
        note(f"baseline RSS {baseline:.0f} MiB; {args.watchers} idle watchers ...")
        held = watchers.Watchers(children, "http", url, watchers.QUIET, args.watchers, revision)
        asyncio.run(held.ready())
        with_watchers = rss(server.proc.pid)
        note(f"load for {args.duration:g} s: {args.clients} clients, a large LIST, the probe ...")
        seconds = str(args.duration)
        probe_child = children.start("probe", "-m", "bench.load", "--probe", url, "--duration", seconds, control=True)
        lister_child = children.start("lister", "-m", "bench.load", "--lister", url, "--duration", seconds,
                                      "--objects", str(args.objects), control=True)
        hammer_child = children.start("hammer", "-m", "bench.load", "--hammer", url, "--duration", seconds,
                                      "--clients", str(args.clients), control=True)
        peak = with_watchers
        while hammer_child.proc.poll() is None or probe_child.proc.poll() is None:
            peak = max(peak, rss(server.proc.pid))
            time.sleep(0.25)
        outputs = [json.loads(child.proc.communicate(timeout=300)[0] or b"null")
                   for child in (probe_child, lister_child, hammer_child)]
        probed, lists, hammered = outputs
        asyncio.run(held.leave())
        note(f"load gone; memory in {SETTLE:g} s ...")
        time.sleep(SETTLE)
        after = rss(server.proc.pid)
        readyz, small = sorted(probed["readyz"]), sorted(probed["get"])
        shape = {"clients": args.clients, "watchers": args.watchers, "objects": args.objects,
                 "seconds": args.duration}
        ok &= emit("readyz-under-load", "capstan-serve", "readyz_p99_ms", percentile(readyz, 0.99),
                   at_most(100, " ms"), readyz_p50_ms=round(statistics.median(readyz), 1),
                   readyz_max_ms=round(readyz[-1], 1), probes=len(readyz), **shape)
        ok &= emit("small-get-under-load", "capstan-serve", "get_p99_ms", percentile(small, 0.99),
                   at_most(100, " ms"), get_p50_ms=round(statistics.median(small), 1),
                   get_max_ms=round(small[-1], 1), probes=len(small), codes=probed["codes"], **shape)
        emit("hammer", "capstan-serve", "served", hammered["served"], context("2,000 clients"),
             **{k: round(v, 1) for k, v in hammered.items() if k != "served"}, **shape)
        emit("large-list", "capstan-serve", "list_p50_ms", statistics.median(lists) if lists else 0.0,
             context("back to back"), lists=len(lists), **shape)
        ok &= emit("rss-after-load", "capstan-serve", "rss_ratio", after / baseline, at_most(1.2, "x baseline"),
                   baseline_mb=round(baseline), with_watchers_mb=round(with_watchers), peak_mb=round(peak),
                   after_mb=round(after), settle_s=SETTLE, **shape)
    finally:
        children.stop()
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=2000)
    parser.add_argument("--watchers", type=int, default=2000)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--lister", help=argparse.SUPPRESS)
    parser.add_argument("--hammer", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        asyncio.run(probe(args.probe, args.duration))
    elif args.lister:
        asyncio.run(lister(args.lister, args.duration, args.objects))
    elif args.hammer:
        asyncio.run(hammer(args.hammer, args.clients, args.duration))
    else:
        return run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
