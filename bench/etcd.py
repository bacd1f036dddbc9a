"""How fast Capstan serves over etcd, beside Capstan over LMDB and the scale-out form on etcd, in one run.

The goals compare Capstan on etcd with a real kube-apiserver on the same etcd. No kube-apiserver
binary exists on this machine (and the registries here ship none), so each goal is held against
kube-apiserver 1.28's figures recorded on this machine under bench/http.py's workload (656
creates/s, 1,306 gets/s, 861 updates/s, LIST of 5,000 in 180 ms as JSON and 151 ms as protobuf,
watch p99 17 ms), and beside it the ratio recorded between Capstan on LMDB over plain HTTP and a
kube-apiserver over TLS (1.35x the creates and updates, 2.2x the gets: etcd/LMDB in this run
times that ratio).

    python -m bench.etcd [--quick] [--only create,get,...] [--impls capstan-lmdb,capstan-etcd,...]

Layouts, every process its own, all started before the first workload and measured in turn,
round by round, the order rotating (bench/http.py's client and workloads, unchanged):
  capstan-lmdb     `capstan serve --insecure` on LMDB in --data-dir (fsync on, as served)
  capstan-etcd     `capstan serve --insecure --etcd-servers` over one etcd 3.5 member (fsync on)
  scaleout-etcd    3 etcd members, 2 `capstan core` and 2 `capstan gateway --core A,B`; the client
                   spreads requests and watchers over both gateways
  capstan-lmdb-nocache, capstan-etcd-nocache (only when named in --impls)
                   capstan-lmdb and capstan-etcd with `--watch-cache false`: the watch cache's effect on
                   each backend, in the same run

Workloads: bench/http.py's create, get, update, list-json, list-protobuf and watch (see its
docstring); list-json-rv0 and list-protobuf-rv0, the same LISTs with resourceVersion=0 (which
kube-apiserver and Capstan answer from the watch cache where it is on; an unset resourceVersion is
a consistent read from the store); and list-floor: the same 5,000 ConfigMaps read by one etcd Range
from this process (what a LIST on etcd without the cache reads every time).
Every figure carries each process's CPU per request (etcd members included) and, on etcd, the
cores each process kept busy at the median rate. After them, per op: `capstan-etcd/capstan-lmdb`
and `capstan-etcd/kube-apiserver` (the goal; kube's recorded figure, not this run).

Stdout is one JSON line per figure (see bench/_util.py); progress goes to stderr. Exit status 1
means a layout failed a workload or answered wrongly; a missed goal is only `"ok": false`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import grpc.aio

from bench import http
from bench._processes import Children, start_etcd
from bench._util import Goal, at_least, at_most, check_choices, context, emit, exit_on_sigterm, note
from storage.etcd.keys import range_end
from storage.etcd.pb.etcdserverpb import rpc_pb2, rpc_pb2_grpc

IMPLS = ("capstan-lmdb", "capstan-etcd", "scaleout-etcd", "capstan-lmdb-nocache", "capstan-etcd-nocache")
DEFAULT_IMPLS = ("capstan-lmdb", "capstan-etcd", "scaleout-etcd")
# The same `capstan serve` without the watch cache: the cache's effect, in one run.
WATCH_CACHE_FLAGS = {"capstan-lmdb-nocache": ("--watch-cache", "false"),
                     "capstan-etcd-nocache": ("--watch-cache", "false")}
OPS = ("create", "get", "update", "list-json", "list-protobuf", "list-json-rv0", "list-protobuf-rv0", "watch",
       "list-floor")
PREFIX = b"/registry"  # capstan's default --etcd-prefix

# kube-apiserver 1.28 on its etcd, this machine, bench/http.py's workload (recorded, not run here).
KUBE = {"create": 656.0, "get": 1_306.0, "update": 861.0, "list-json": 180.0, "list-protobuf": 151.0,
        "watch": 17.0}
KUBE_LIST_OBJECTS = 5_000
# The goals as ratios of Capstan-on-etcd's figure to kube-apiserver's on the same etcd.
GOALS = {"create": at_least(2, "x"), "update": at_least(2, "x"), "get": at_least(1.5, "x"),
         "list-json": at_most(0.5, "x"), "list-protobuf": at_most(0.5, "x"), "watch": at_most(1, "x")}
# Capstan on LMDB over plain HTTP / kube-apiserver 1.28 over TLS, measured side by side (recorded).
LMDB_OVER_KUBE = {"create": 1.35, "update": 1.35, "get": 2.2}
HIGHER_IS_BETTER = {"create", "get", "update"}
# Goals held by capstan-etcd's own figure: the LISTs the watch cache answers, at most 35 ms for 5,000.
CACHED_GOALS = {"list-json-rv0": at_most(35, " ms"), "list-protobuf-rv0": at_most(35, " ms")}


def absolute_goal(op: str) -> Goal:
    """The ratio goal as a bound on Capstan-on-etcd's own figure, by kube's recorded figure."""
    ratio, kube = GOALS[op].bound, KUBE[op]
    if op in HIGHER_IS_BETTER:
        return at_least(round(ratio * kube), f"/s ({ratio:g}x kube-apiserver's recorded {kube:g}/s)")
    return at_most(round(ratio * kube, 1), f" ms ({ratio:g}x kube-apiserver's recorded {kube:g} ms)")


FULL = http.Sizes(objects=5_000, warmup_creates=200, create_rounds=3, gets=3_000, get_rounds=3, updates=1_200,
                  update_rounds=3, lists=2, list_rounds=3, watchers=50, watch_writes=40, watch_rounds=3,
                  round_budget=3.0, catch_up=60.0)
QUICK = http.Sizes(objects=120, warmup_creates=20, create_rounds=1, gets=100, get_rounds=1, updates=50,
                   update_rounds=1, lists=1, list_rounds=1, watchers=4, watch_writes=3, watch_rounds=1,
                   round_budget=0.25, catch_up=10.0)
FLOOR_RANGES = 5  # raw etcd Ranges of the whole collection per layout, after one to warm up


@dataclass
class Target(http.Target):
    """A layout as bench/http.py's client sees it, with its etcd members' URLs and the figures it printed."""

    etcd_urls: tuple[str, ...] = ()
    figures: dict[str, float] | None = None

    def goal(self, op: str) -> Goal:
        if self.impl == "capstan-etcd" and op in GOALS:
            return absolute_goal(op)
        if self.impl == "capstan-etcd" and op in CACHED_GOALS:
            return CACHED_GOALS[op]
        return context("beside capstan-etcd")

    def emit(self, op: str, metric: str, figure: float, *, correct: bool, **extra: Any) -> None:
        by_process = extra.get("cpu_us_per_req_by_process")
        if by_process and metric != "p99_ms":  # cores busy = CPU per request x requests per second
            per_s = figure if metric.endswith("_per_s") else 1e3 / figure if figure else 0.0
            extra["cores_by_process"] = {role: round(us * per_s / 1e6, 2) for role, us in by_process.items()}
        if correct:
            self.figures = {**(self.figures or {}), op: figure}
        super().emit(op, metric, figure, correct=correct, **extra)


# -- processes ---------------------------------------------------------------------------------------------------------


def start_targets(children: Children, root: Path, impls: Sequence[str]) -> list[Target]:
    """Every layout's etcd first, then its capstan processes; each waited for until it listens."""
    capstan = ("-m", "capstan")
    targets = []
    for impl in impls:
        target = Target(impl)
        data = root / impl
        try:
            flags = WATCH_CACHE_FLAGS.get(impl, ())
            if impl.startswith("capstan-lmdb"):
                serve = children.start("serve", *capstan, "serve", "--workers", "1",
                                       "--insecure", "--data-dir", str(data),
                                       "--http-port", "0", "--grpc-port", "0", *flags)
                target.processes = [serve]
                target.bases = [serve.listening(http.LISTENING["serve"])]
            elif impl.startswith("capstan-etcd"):
                members, target.etcd_urls = start_etcd(children, root, impl, 1)
                serve = children.start("serve", *capstan, "serve", "--workers", "1",
                                       "--insecure", "--etcd-servers", target.etcd_urls[0],
                                       "--data-dir", str(data), "--http-port", "0", "--grpc-port", "0", *flags)
                target.processes = [*members, serve]
                target.bases = [serve.listening(http.LISTENING["serve"])]
            else:
                members, target.etcd_urls = start_etcd(children, root, "member", 3)
                servers = ",".join(target.etcd_urls)
                cores, listening = [], []
                for i in range(2):  # one after the other: two cores starting at once race on the APF bootstrap (409)
                    cores.append(children.start(f"core-{i}", *capstan, "core", "--insecure", "--etcd-servers",
                                                servers, "--data-dir", str(data / f"core-{i}"), "--grpc-port", "0"))
                    listening.append(cores[-1].listening(http.LISTENING["core"]))
                addresses = ",".join(listening)
                gateways = [children.start(f"gateway-{i}", *capstan, "gateway", "--insecure", "--core", addresses,
                                           "--data-dir", str(data / f"gateway-{i}"), "--http-port", "0")
                            for i in range(2)]
                target.processes = [*members, *cores, *gateways]
                target.bases = [gateway.listening(http.LISTENING["gateway"]) for gateway in gateways]
        except RuntimeError as err:
            target.error = str(err)
            note(f"{impl}: not running: {err}")
        else:
            note(f"{impl}: {' '.join(target.bases)}; pids "
                 + " ".join(f"{child.role}={child.proc.pid}" for child in target.processes))
        targets.append(target)
    return targets


# -- list-floor: what a LIST on etcd reads -----------------------------------------------------------------------------


async def bench_list_floor(targets: Sequence[Target], sizes: http.Sizes) -> None:
    """One etcd Range of the ConfigMaps in `default`, the bytes parsed into messages as the store's client parses
    them: ms per Range, and the etcd members' CPU for it."""
    for target in targets:
        if not target.etcd_urls:
            target.emit_na("list-floor", "ms_per_range", "not on etcd")
            continue
        if target.error:
            target.emit("list-floor", "ms_per_range", 0.0, correct=False, error=target.error)
            continue
        async with grpc.aio.insecure_channel(target.etcd_urls[0].removeprefix("http://"),
                                             options=[("grpc.max_receive_message_length", -1)]) as channel:
            kv: Any = rpc_pb2_grpc.KVStub(channel)  # type: ignore[no-untyped-call]
            prefix = await configmaps_prefix(kv)
            request = rpc_pb2.RangeRequest(key=prefix, range_end=range_end(prefix))
            etcd = [child for child in target.processes if child.role.startswith("etcd")]
            ms, cpu, count, size = [], [], 0, 0
            for i in range(FLOOR_RANGES + 1):
                before, started = sum(c.cpu_seconds() for c in etcd), time.perf_counter()
                answer = await kv.Range(request)
                if i:  # the first warms the channel up
                    ms.append((time.perf_counter() - started) * 1e3)
                    cpu.append(sum(c.cpu_seconds() for c in etcd) - before)
                count, size = answer.count, answer.ByteSize()
        target.emit("list-floor", "ms_per_range", statistics.median(ms), correct=count >= sizes.objects,
                    min_ms=round(min(ms), 3), max_ms=round(max(ms), 3), keys=count, response_bytes=size,
                    etcd_cpu_ms_per_range=round(statistics.median(cpu) * 1e3, 1), ranges=len(ms),
                    member=target.etcd_urls[0])


async def configmaps_prefix(kv: Any) -> bytes:
    """The etcd key prefix of the ConfigMaps in `default` (docs/architecture.md's layout), checked to hold them."""
    prefix = PREFIX + b"/core/configmaps/default/"
    found = await kv.Range(rpc_pb2.RangeRequest(key=prefix, range_end=range_end(prefix), count_only=True))
    if not found.count:
        raise RuntimeError(f"no ConfigMap under {prefix!r} in etcd: has the store's key layout changed?")
    return prefix


# -- ratios ------------------------------------------------------------------------------------------------------------


def emit_ratios(targets: Sequence[Target], ops: Sequence[str], objects: int) -> None:
    """Per op: Capstan on etcd over Capstan on LMDB (this run), and over kube-apiserver (the goal; a LIST
    only at kube's size, 5,000)."""
    figures = {t.impl: t.figures or {} for t in targets}
    etcd, lmdb = figures.get("capstan-etcd", {}), figures.get("capstan-lmdb", {})
    for op in (op for op in GOALS if op in ops):
        if op not in etcd:
            continue
        if lmdb.get(op):
            emit(op, "capstan-etcd/capstan-lmdb", "ratio", etcd[op] / lmdb[op], context("this run"))
        elif op in lmdb:  # a watch p99 of 0: every event was read before the create's response
            na(op, "capstan-etcd/capstan-lmdb", "ratio", context("this run"), "capstan-lmdb's figure is 0")
        if op.startswith("list") and objects != KUBE_LIST_OBJECTS:
            na(op, "capstan-etcd/kube-apiserver", "ratio", GOALS[op],
               f"kube-apiserver's LIST was of {KUBE_LIST_OBJECTS:,}, this one of {objects:,}")
            continue
        vs_kube = etcd[op] / KUBE[op]
        extra: dict[str, Any] = {"kube_apiserver": KUBE[op], "kube_apiserver_source":
                                 "recorded on this machine, not this run: no kube-apiserver binary here"}
        if op in LMDB_OVER_KUBE and lmdb.get(op):
            extra["ratio_by_lmdb_over_kube"] = round(etcd[op] / lmdb[op] * LMDB_OVER_KUBE[op], 2)
            extra["lmdb_over_kube"] = LMDB_OVER_KUBE[op]
        emit(op, "capstan-etcd/kube-apiserver", "ratio", vs_kube, GOALS[op], **extra)


def na(op: str, impl: str, metric: str, goal: Goal, reason: str) -> None:
    """A figure that does not apply: null, neither met nor missed."""
    print(json.dumps({"op": op, "impl": impl, "metric": metric, metric: None, "goal": goal.text, "ok": None,
                      "na": reason}), flush=True)


# -- main --------------------------------------------------------------------------------------------------------------


async def run(targets: Sequence[Target], sizes: http.Sizes, ops: Sequence[str]) -> None:
    timeout = aiohttp.ClientTimeout(total=http.REQUEST_TIMEOUT)
    for target in targets:
        target.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=sizes.workers), timeout=timeout)
    workloads: dict[str, Callable[[], Awaitable[None]]] = {
        "get": lambda: http.bench_get(targets, sizes),
        "update": lambda: http.bench_update(targets, sizes),
        "list-json": lambda: http.bench_list(targets, sizes, protobuf=False),
        "list-protobuf": lambda: http.bench_list(targets, sizes, protobuf=True),
        "list-json-rv0": lambda: http.bench_list(targets, sizes, protobuf=False, any_version=True),
        "list-protobuf-rv0": lambda: http.bench_list(targets, sizes, protobuf=True, any_version=True),
        "list-floor": lambda: bench_list_floor(targets, sizes),
        "watch": lambda: http.bench_watch(targets, sizes),
    }
    try:
        note("create ...")
        await http.bench_create(targets, sizes, measure="create" in ops)
        for op in workloads:  # in this order whatever --only says: the watch's creates come after the lists
            if op in ops:
                note(f"{op} ...")
                await workloads[op]()
    finally:
        for target in targets:
            if target.session is not None:
                await target.session.close()
    emit_ratios(targets, ops, sizes.objects)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.etcd", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", default=",".join(OPS), help=f"comma-separated workloads (default {','.join(OPS)})")
    parser.add_argument("--impls", default=",".join(DEFAULT_IMPLS),
                        help=f"comma-separated layouts among {','.join(IMPLS)} (default {','.join(DEFAULT_IMPLS)})")
    args = parser.parse_args(argv)
    check_choices(parser, args, only=OPS, impls=IMPLS)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_on_sigterm()
    sizes = QUICK if args.quick else FULL
    impls = [impl for impl in IMPLS if impl in args.impls.split(",")]
    root = Path(tempfile.mkdtemp(prefix="capstan-bench-etcd-"))
    children = Children(root)
    failed = False
    try:
        targets = start_targets(children, root, impls)
        asyncio.run(run(targets, sizes, args.only.split(",")))
        wrong = [f"{t.impl}:{op}" for t in targets for op in t.wrong]
        if wrong or any(t.error for t in targets):
            note(f"failed or answered wrongly: {' '.join(wrong)}")
            failed = True
    except Exception:
        traceback.print_exc()
        failed = True
    finally:
        children.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
