"""Health checks and small requests under mixed load: the latency of /readyz and of a GET of one
ConfigMap, side by side, while 2,000 clients hammer the server, 2,000 watchers sit idle and large LISTs
stream; and the server's memory before, at its peak and after the load has left.

    python -m bench.load [--duration 20] [--clients 2000] [--watchers 2000] [--objects 10000] [--rounds 2]
                         [--allocators auto,python]

The server is `capstan serve --insecure` on loopback with its default limits, in a process of its own (its RSS
read from /proc), once per `--allocators` value (CAPSTAN_ALLOCATOR: `auto` is the default, jemalloc where
installed; `python` is CPython's own allocator), one after the other. Each load runs in its own process so
that no client starves another of CPU on the two shared cores, and the probe's latency is the server's, not a
crowded client's:
- the hammer: `--clients` aiohttp clients in one process, bench.overload's loop (nine GETs of a small ConfigMap
  for one merge PATCH, a 429 honoured by waiting Retry-After);
- the watchers: bench.watchers' holder, `--watchers` HTTP watches of a quiet namespace that read nothing;
- the lister: a third client (127.0.0.3), un-paged LISTs of `--objects` ~1 KiB ConfigMaps (bench.biglist's),
  one after another;
- the probe: four loops, each every 50 ms: a GET of /readyz on the health port (`--health-port`) and on the
  serving port, a GET of one ConfigMap from another client (its own flow: a connection from 127.0.0.2, as a
  second client host is, since none of them carries a credential), and the same GET from the hammer's flow
  (127.0.0.1).
The baseline is the server at rest after it has served each of the load's requests once (warm()); the RSS
before anything was read is printed beside it. The load runs `--rounds` times in a row against the same server
(memory must not grow from one to the next); the latency figures are the last round's.
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
import os
import re
import shutil
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


async def warm(url: str, objects: int) -> None:
    """Each of the load's requests once, lightly: a LIST of the collection, 20 of the hammer's clients for a
    second (GETs and PATCHes), so the baseline is a server at rest that has served its data: LMDB's pages a
    LIST reads are mapped and the renderings a LIST fills are cached (kube-apiserver's baseline holds its
    watch cache of every object from its start), and what stays above it is what the load left."""
    async with aiohttp.ClientSession() as session:
        await biglist.one_list(session, url, biglist.FORMS["json"], objects)
    await overload.load(url, 20, 1.0)


def memory(pid: int) -> tuple[float, float]:
    """The RSS and the anonymous memory (MiB) of a process."""
    return rss(pid), watchers.anonymous_of(pid)


def one_load(args: argparse.Namespace, children: Children, url: str, health: str, revision: str,
             pid: int, lag_file: str) -> dict[str, Any]:
    """One round: the watchers arrive, the load runs, everything leaves; the figures and the memory."""
    held = watchers.Watchers(children, "http", url, watchers.QUIET, args.watchers, revision)
    asyncio.run(held.ready())
    with_watchers = rss(pid)
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
        peak = max(peak, rss(pid))
        time.sleep(0.25)
    probed, lists, hammered = [json.loads(child.proc.communicate(timeout=300)[0] or b"null")
                               for child in (probe_child, lister_child, hammer_child)]
    lags, ready = _looplag.read(lag_file, load_start, time.time())
    pauses = _looplag.gc_pauses(lag_file, load_start, time.time())
    asyncio.run(held.leave())
    note(f"load gone; memory in {SETTLE:g} s ...")
    time.sleep(SETTLE)
    after, after_anon = memory(pid)
    note(f"RSS with the watchers {with_watchers:.0f} MiB, peak {peak:.0f}, after {after:.0f} (anonymous "
         f"{after_anon:.0f})")
    return {"probed": probed, "lists": lists, "hammered": hammered, "lags": lags, "ready": ready,
            "pauses": pauses, "with_watchers": with_watchers, "peak": peak, "after": after,
            "after_anon": after_anon}


def report(impl: str, args: argparse.Namespace, figures: dict[str, Any], memory_seen: dict[str, float]) -> bool:
    """The figures' JSON lines; whether the goals were met."""
    probed, lists, hammered = figures["probed"], figures["lists"], figures["hammered"]
    lags, ready, pauses = figures["lags"], figures["ready"], figures["pauses"]
    readyz, small, own = sorted(probed["readyz"]), sorted(probed["get"]), sorted(probed["get_hammer_flow"])
    serving_port = sorted(probed["readyz_serving_port"])
    shape = {"clients": args.clients, "watchers": args.watchers, "objects": args.objects,
             "seconds": args.duration, "serve_args": args.serve_arg}
    ok = emit("readyz-under-load", impl, "readyz_p99_ms", percentile(readyz, 0.99),
              at_most(100, " ms"), readyz_p50_ms=round(statistics.median(readyz), 1),
              readyz_max_ms=round(readyz[-1], 1), probes=len(readyz), **shape)
    emit("readyz-serving-port", impl, "readyz_p99_ms", percentile(serving_port, 0.99),
         context("the serving port's /readyz"), readyz_p50_ms=round(statistics.median(serving_port), 1), **shape)
    ok &= emit("small-get-under-load", impl, "get_p99_ms", percentile(small, 0.99),
               at_most(100, " ms"), get_p50_ms=round(statistics.median(small), 1),
               get_max_ms=round(small[-1], 1), probes=len(small), codes=probed["codes"], **shape)
    emit("small-get-hammer-flow", impl, "get_p99_ms", percentile(own, 0.99),
         context("the hammer's own flow"), get_p50_ms=round(statistics.median(own), 1), **shape)
    emit("loop-lag", impl, "lag_p99_ms", percentile(lags, 0.99), context("under load"),
         lag_p50_ms=round(percentile(lags, 0.5), 1), lag_max_ms=round(max(lags, default=0.0), 1),
         wakeups=len(lags), ready_p50=percentile([float(n) for n in ready], 0.5),
         ready_p99=percentile([float(n) for n in ready], 0.99), ready_max=max(ready, default=0), **shape)
    collections: dict[str, Any] = {f"gen{g}_count": len(p) for g, p in pauses.items()}
    collections |= {f"gen{g}_max_ms": round(max(p, default=0.0), 1) for g, p in pauses.items()}
    emit("gc-pauses", impl, "gen2_max_ms", max(pauses[2], default=0.0), context("under load"),
         gen2_total_ms=round(sum(pauses[2]), 1), **collections, **shape)
    emit("hammer", impl, "served", hammered["served"], context("2,000 clients"),
         **{k: round(v, 1) for k, v in hammered.items() if k != "served"}, **shape)
    emit("large-list", impl, "list_p50_ms", statistics.median(lists) if lists else 0.0,
         context("back to back"), lists=len(lists), **shape)
    baseline, after = memory_seen["baseline"], figures["after"]
    ok &= emit("rss-after-load", impl, "rss_ratio", after / baseline, at_most(1.2, "x baseline"),
               baseline_mb=round(baseline), with_watchers_mb=round(figures["with_watchers"]),
               peak_mb=round(figures["peak"]), after_mb=round(after),
               anonymous_baseline_mb=round(memory_seen["baseline_anon"]),
               anonymous_after_mb=round(figures["after_anon"]),
               anonymous_ratio=round(figures["after_anon"] / memory_seen["baseline_anon"], 2),
               after_each_round_mb=memory_seen["rounds"], settle_s=SETTLE, **shape)
    emit("rss-after-load-cold-baseline", impl, "rss_ratio", after / memory_seen["cold"],
         context("over the RSS before anything was read"), cold_baseline_mb=round(memory_seen["cold"]),
         cold_anonymous_mb=round(memory_seen["cold_anon"]), **shape)
    return ok


def run_with(args: argparse.Namespace, allocator: str) -> bool:
    """The whole scenario against one `capstan serve` under CAPSTAN_ALLOCATOR=allocator, `--rounds` times."""
    root = Path(tempfile.mkdtemp(prefix="capstan-bench-load-"))
    children = Children(root)
    os.environ["CAPSTAN_ALLOCATOR"] = allocator
    impl = "capstan-serve" if allocator == "auto" else f"capstan-serve-{allocator}"
    try:
        lag_file = str(root / "looplag.txt")
        server = children.start("serve", "-m", "bench._looplag", lag_file, "serve", "--workers", "1",
                                "--insecure", "--data-dir",
                                str(root / "data"), "--http-port", "0", "--grpc-port", "0", "--grpc-mtls-port", "-1",
                                "--health-port", "0", *args.serve_arg)
        url = server.listening(LISTENING)
        health = server.listening(HEALTH)
        revision = asyncio.run(prepare(url, args.objects))
        time.sleep(2.0)
        cold, cold_anon = memory(server.proc.pid)
        asyncio.run(warm(url, args.objects))
        time.sleep(2.0)
        baseline, baseline_anon = memory(server.proc.pid)
        note(f"{impl}: RSS {cold:.0f} MiB before anything was read, {baseline:.0f} MiB at the baseline")
        seen: dict[str, Any] = {"cold": cold, "cold_anon": cold_anon, "baseline": baseline,
                                "baseline_anon": baseline_anon, "rounds": []}
        figures: dict[str, Any] = {}
        for _ in range(args.rounds):
            figures = one_load(args, children, url, health, revision, server.proc.pid, lag_file)
            seen["rounds"].append(round(figures["after"]))
        server.proc.send_signal(signal.SIGUSR1)  # bench._looplag: allocator statistics to its files
        return report(impl, args, figures, seen)
    finally:
        children.stop()
        shutil.rmtree(root, ignore_errors=True)


def run(args: argparse.Namespace) -> int:
    ok = True
    for allocator in args.allocators.split(","):
        ok &= run_with(args, allocator)
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=2000)
    parser.add_argument("--watchers", type=int, default=2000)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--serve-arg", action="append", default=[], help="a flag for capstan serve (repeatable)")
    parser.add_argument("--rounds", type=int, default=2, help="loads in a row against the same server")
    parser.add_argument("--allocators", default="auto,python",
                        help="CAPSTAN_ALLOCATOR values, one server each, side by side (auto: jemalloc if installed)")
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
