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
- the lister: a third client (127.0.0.3), un-paged LISTs of `--objects` ~1 KiB ConfigMaps (bench.biglist's),
  one after another;
- the probe: four loops, each every 50 ms: a GET of /readyz on the health port (`--health-port`) and on the
  serving port, a GET of one ConfigMap from another client (its own flow: a connection from 127.0.0.2, as a
  second client host is, since none of them carries a credential), and the same GET from the hammer's flow
  (127.0.0.1).
The server runs under bench._looplag, so the event loop's lag and run-queue length during the load are
printed too. `--serve-arg=--flag=value` (repeatable) passes a flag to `capstan serve`.
Goal lines (bench/_util.py's shape): p99 of /readyz and of the other client's GET under 100 ms (the hammer's
own GET waits its turn behind its own queue, as APF makes a flow wait: printed for comparison); RSS back
within 20% of the baseline 10 s after the load leaves. Figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench import _looplag, biglist, overload, watchers
from bench._processes import Children
from bench._util import at_most, context, emit, note

LISTENING = re.compile(r"capstan serving: HTTP (http://\S+) gRPC (\S+)")
HEALTH = re.compile(r"capstan health: (http://\S+)")
SMALL = f"{overload.CM}/bench-0"
PROBE_EVERY = 0.05  # seconds between probes
SETTLE = 10.0  # seconds after the load leaves before memory is read again


def percentile(values: list[float], q: float) -> float:
    return overload.percentile(values, q)


OTHER_HOST = "127.0.0.2"  # the other client's source address: another flow for the server's fair queuing
LISTER_HOST = "127.0.0.3"  # the lister's: a third client


async def probe(url: str, health: str, duration: float) -> None:
    """The --probe process: /readyz on the health port and on the serving port, the other client's GET and
    the hammer flow's GET, each in a loop of its own every PROBE_EVERY (so a slow one does not thin out the
    others' samples); prints the latency lists (ms)."""
    out: dict[str, list[float]] = {"readyz": [], "readyz_serving_port": [], "get": [], "get_hammer_flow": []}
    codes: dict[str, int] = {}
    deadline = time.monotonic() + duration
    timeout = aiohttp.ClientTimeout(total=60)

    async def every(name: str, session: aiohttp.ClientSession, target: str) -> None:
        while time.monotonic() < deadline:
            started = time.monotonic()
            try:
                async with session.get(target) as resp:
                    await resp.read()
                    code = str(resp.status)
            except (TimeoutError, aiohttp.ClientError):
                code = "error"
            out[name].append((time.monotonic() - started) * 1e3)
            codes[f"{name} {code}"] = codes.get(f"{name} {code}", 0) + 1
            await asyncio.sleep(PROBE_EVERY)

    other = aiohttp.TCPConnector(local_addr=(OTHER_HOST, 0))
    async with aiohttp.ClientSession(timeout=timeout, connector=other) as mine, \
            aiohttp.ClientSession(timeout=timeout) as hammers:
        await asyncio.gather(every("readyz", mine, health + "/readyz"),
                             every("readyz_serving_port", mine, url + "/readyz"), every("get", mine, url + SMALL),
                             every("get_hammer_flow", hammers, url + SMALL))
    print(json.dumps({**out, "codes": codes}), flush=True)


async def lister(url: str, duration: float, objects: int) -> None:
    """The --lister process: un-paged LISTs back to back from a client host of its own (LISTER_HOST), a 429
    waiting its Retry-After as client-go does; prints the latencies (ms) of the lists answered."""
    took: list[float] = []
    deadline = time.monotonic() + duration
    connector = aiohttp.TCPConnector(local_addr=(LISTER_HOST, 0))
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300), connector=connector) as session:
        while time.monotonic() < deadline:
            try:
                took.append(await biglist.one_list(session, url, biglist.FORMS["json"], objects) * 1e3)
            except RuntimeError as err:
                if " 429:" not in str(err):
                    raise
                await asyncio.sleep(1.0)
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
        lag_file = str(root / "looplag.txt")
        server = children.start("serve", "-m", "bench._looplag", lag_file, "serve", "--insecure", "--data-dir",
                                str(root / "data"), "--http-port", "0", "--grpc-port", "0", "--grpc-mtls-port", "-1",
                                "--health-port", "0", *args.serve_arg)
        url = server.listening(LISTENING)
        health = server.listening(HEALTH)
        revision = asyncio.run(prepare(url, args.objects))
        time.sleep(2.0)
        baseline, baseline_anon = rss(server.proc.pid), watchers.anonymous_of(server.proc.pid)
        server.proc.send_signal(signal.SIGUSR1)  # the live objects at the baseline, for comparison
        note(f"baseline RSS {baseline:.0f} MiB; {args.watchers} idle watchers ...")
        held = watchers.Watchers(children, "http", url, watchers.QUIET, args.watchers, revision)
        asyncio.run(held.ready())
        with_watchers = rss(server.proc.pid)
        note(f"load for {args.duration:g} s: {args.clients} clients, a large LIST, the probe ...")
        seconds = str(args.duration)
        load_start = time.time()
        probe_child = children.start("probe", "-m", "bench.load", "--probe", url, "--health", health, "--duration",
                                     seconds, control=True)
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
        lags, ready = _looplag.read(lag_file, load_start, time.time())
        pauses = _looplag.gc_pauses(lag_file, load_start, time.time())
        asyncio.run(held.leave())
        note(f"load gone; memory in {SETTLE:g} s ...")
        time.sleep(SETTLE)
        after, after_anon = rss(server.proc.pid), watchers.anonymous_of(server.proc.pid)
        server.proc.send_signal(signal.SIGUSR1)  # bench._looplag: gc.collect() and malloc_trim(0)
        time.sleep(1.0)
        trimmed = rss(server.proc.pid)
        readyz, small, own = sorted(probed["readyz"]), sorted(probed["get"]), sorted(probed["get_hammer_flow"])
        serving_port = sorted(probed["readyz_serving_port"])
        shape = {"clients": args.clients, "watchers": args.watchers, "objects": args.objects,
                 "seconds": args.duration, "serve_args": args.serve_arg}
        ok &= emit("readyz-under-load", "capstan-serve", "readyz_p99_ms", percentile(readyz, 0.99),
                   at_most(100, " ms"), readyz_p50_ms=round(statistics.median(readyz), 1),
                   readyz_max_ms=round(readyz[-1], 1), probes=len(readyz), **shape)
        emit("readyz-serving-port", "capstan-serve", "readyz_p99_ms", percentile(serving_port, 0.99),
             context("the serving port's /readyz"), readyz_p50_ms=round(statistics.median(serving_port), 1), **shape)
        ok &= emit("small-get-under-load", "capstan-serve", "get_p99_ms", percentile(small, 0.99),
                   at_most(100, " ms"), get_p50_ms=round(statistics.median(small), 1),
                   get_max_ms=round(small[-1], 1), probes=len(small), codes=probed["codes"], **shape)
        emit("small-get-hammer-flow", "capstan-serve", "get_p99_ms", percentile(own, 0.99),
             context("the hammer's own flow"), get_p50_ms=round(statistics.median(own), 1), **shape)
        emit("loop-lag", "capstan-serve", "lag_p99_ms", percentile(lags, 0.99), context("under load"),
             lag_p50_ms=round(percentile(lags, 0.5), 1), lag_max_ms=round(max(lags, default=0.0), 1),
             wakeups=len(lags), ready_p50=percentile([float(n) for n in ready], 0.5),
             ready_p99=percentile([float(n) for n in ready], 0.99), ready_max=max(ready, default=0), **shape)
        collections: dict[str, Any] = {f"gen{g}_count": len(p) for g, p in pauses.items()}
        collections |= {f"gen{g}_max_ms": round(max(p, default=0.0), 1) for g, p in pauses.items()}
        emit("gc-pauses", "capstan-serve", "gen2_max_ms", max(pauses[2], default=0.0), context("under load"),
             gen2_total_ms=round(sum(pauses[2]), 1), **collections, **shape)
        emit("hammer", "capstan-serve", "served", hammered["served"], context("2,000 clients"),
             **{k: round(v, 1) for k, v in hammered.items() if k != "served"}, **shape)
        emit("large-list", "capstan-serve", "list_p50_ms", statistics.median(lists) if lists else 0.0,
             context("back to back"), lists=len(lists), **shape)
        ok &= emit("rss-after-load", "capstan-serve", "rss_ratio", after / baseline, at_most(1.2, "x baseline"),
                   baseline_mb=round(baseline), with_watchers_mb=round(with_watchers), peak_mb=round(peak),
                   after_mb=round(after), anonymous_baseline_mb=round(baseline_anon),
                   anonymous_after_mb=round(after_anon), anonymous_ratio=round(after_anon / baseline_anon, 2),
                   settle_s=SETTLE, **shape)
        emit("rss-after-trim", "capstan-serve", "rss_ratio", trimmed / baseline, context("gc and malloc_trim"),
             after_trim_mb=round(trimmed), **shape)
    finally:
        children.stop()
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=2000)
    parser.add_argument("--watchers", type=int, default=2000)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--serve-arg", action="append", default=[], help="a flag for capstan serve (repeatable)")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--health", help=argparse.SUPPRESS)
    parser.add_argument("--lister", help=argparse.SUPPRESS)
    parser.add_argument("--hammer", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        asyncio.run(probe(args.probe, args.health, args.duration))
    elif args.lister:
        asyncio.run(lister(args.lister, args.duration, args.objects))
    elif args.hammer:
        asyncio.run(hammer(args.hammer, args.clients, args.duration))
    else:
        return run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
