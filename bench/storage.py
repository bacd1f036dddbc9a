"""How fast Capstan's LMDB store is, next to what bare py-lmdb does on the same disk in the same run.

The store adds Python layers over LMDB (group commit, revision-keyed history, watch
fan-out); each workload measures the store against its goal and against a raw py-lmdb
ceiling, so a slow figure can be read as "the disk", "Python" or "the store" at a glance.

    python -m bench.storage [--quick] [--only create,get,list,watch,scale,follow] [--scale-keys N]

Workloads (full sizes; --quick shrinks them for a smoke run):
  create  64 writers create 20,000 keys of 1 KiB with fsync on: acknowledged writes/s.
          Raw: the same puts in transactions of the size the store's group commit
          achieved (read from LMDB's transaction counter), and one put per transaction
          (2,000 of those only: a slow disk manages a few hundred fsyncs a second).
  get     200,000 gets of random keys among 10,000, by 1 and by 64 readers: gets/s
          (the median of 5 rounds).
  list    a whole 10,000-key prefix (with neighbours on either side): ms per list
          (the median of 20).
  watch   1,000 watchers on one prefix, 1,000 creates by 64 writers; every watcher must
          get every event, in order: deliveries/s from the first write to the last delivery.
  scale   build a 1,000,000-key store (fsync off, many writers), close it, then open it
          and get one key in a fresh interpreter: seconds, and that process's peak RSS.
  follow  another process over the same environment (as `--workers N` runs them) creates
          2,000 keys of 1 KiB, 64 KiB and 256 KiB (fsync off, 16 writers); this process
          follows them from the log: its CPU per write, with no watcher of those keys
          (`capstan`) and beside it with one that reads every event (`capstan-watched`).

Stdout is one JSON line per figure (see bench/_util.py); progress goes to stderr. Data
lives in a temporary directory that is removed at the end. Exit status 1 means a workload
failed or returned wrong results; a missed goal is only `"ok": false`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import lmdb

from bench._util import (
    Timings,
    at_least,
    at_most,
    below,
    context,
    emit,
    note,
    process_usage,
    run_workers,
    run_workloads,
)
from storage import StoreOptions
from storage.lmdb import LmdbStore
from storage.lmdb.peers import ENV, Peers

REPO_ROOT = Path(__file__).resolve().parent.parent
VALUE = os.urandom(1024)
PREFIX = b"/registry/pods/bench/"
NEIGHBOURS = (b"/registry/pods/aaa/", b"/registry/pods/zzz/")  # keys just outside PREFIX, both sides

CREATE_GOAL = at_least(10_000, "/s")
GET_GOAL = at_least(150_000, "/s")
LIST_GOAL = at_most(25, " ms")
WATCH_GOAL = at_least(300_000, "/s")
OPEN_GOAL = below(2, " s")
RSS_GOAL = below(200, " MB")


@dataclass(frozen=True, slots=True)
class Sizes:
    creates: int
    writers: int
    keys: int  # the get/list population under PREFIX
    gets: int
    lists: int
    watchers: int
    events: int
    scale_keys: int
    follows: int  # writes another process commits, per value size
    follow_sizes: tuple[int, ...]  # the value sizes those writes have
    build_writers: int = 1_024  # concurrent creates when building a big store: deep group commits


FULL = Sizes(
    creates=20_000, writers=64, keys=10_000, gets=200_000, lists=20, watchers=1_000, events=1_000,
    scale_keys=1_000_000, follows=2_000, follow_sizes=(1 << 10, 64 << 10, 256 << 10),
)
QUICK = Sizes(
    creates=500, writers=64, keys=1_000, gets=5_000, lists=3, watchers=50, events=50, scale_keys=5_000,
    follows=200, follow_sizes=(1 << 10, 64 << 10),
)


def key(i: int, prefix: bytes = PREFIX) -> bytes:
    return prefix + b"%08d" % i


async def populate(store: LmdbStore, count: int, *, prefix: bytes = PREFIX, workers: int = 256) -> None:
    async def create(i: int) -> None:
        if not (await store.create(key(i, prefix), VALUE)).ok:
            raise AssertionError(f"create {key(i, prefix)!r} failed")

    await run_workers(count, workers, create)


def raw_env(path: Path, *, sync: bool) -> Any:
    return lmdb.open(str(path), map_size=1 << 40, sync=sync, metasync=sync)


def raw_put(env: Any, keys: Sequence[bytes], batch: int) -> float:
    """Put `keys` in transactions of `batch` puts; seconds taken."""
    start = time.perf_counter()
    for first in range(0, len(keys), batch):
        with env.begin(write=True) as txn:
            for k in keys[first : first + batch]:
                txn.put(k, VALUE)
    return time.perf_counter() - start


def commits(path: Path) -> int:
    """Write transactions ever committed to the LMDB environment at `path` (closed by its owner)."""
    env = lmdb.open(str(path), readonly=True, lock=False, subdir=path.is_dir(), max_dbs=64)
    try:
        return int(env.info()["last_txnid"])
    finally:
        env.close()


async def commits_per_open(root: Path) -> int:
    """Transactions the store commits by merely opening and closing: subtracted from counts."""
    path = root / "empty"
    store = await LmdbStore.open(path, StoreOptions())
    await store.close()
    return commits(path)


async def bench_create(root: Path, sizes: Sizes) -> None:
    n, path = sizes.creates, root / "create"
    store = await LmdbStore.open(path, StoreOptions(sync=True))
    start = time.perf_counter()
    await populate(store, n, workers=sizes.writers)
    elapsed = time.perf_counter() - start
    await store.close()
    txns = commits(path) - await commits_per_open(root)
    batch = n / max(txns, 1)
    context: dict[str, Any] = {"count": n, "value_bytes": len(VALUE), "sync": True}
    emit("create", "capstan", "writes_per_s", n / elapsed, CREATE_GOAL,
         writers=sizes.writers, commits=txns, mean_batch=round(batch, 1), **context)

    keys = [key(i) for i in range(n)]
    for run, (raw_batch, count) in enumerate(((max(1, round(batch)), n), (1, min(n, 2_000)))):
        env = raw_env(root / f"raw-create-{run}", sync=True)
        seconds = raw_put(env, keys[:count], raw_batch)
        env.close()
        emit("create", "raw-lmdb", "writes_per_s", count / seconds, CREATE_GOAL,
             batch=raw_batch, **(context | {"count": count}))


async def populated_store(path: Path, sizes: Sizes) -> LmdbStore:
    store = await LmdbStore.open(path, StoreOptions(sync=False))
    for neighbour in NEIGHBOURS:
        await populate(store, sizes.keys // 10, prefix=neighbour)
    await populate(store, sizes.keys)
    return store


def populated_raw(path: Path, sizes: Sizes) -> Any:
    env = raw_env(path, sync=False)
    for prefix in (*NEIGHBOURS, PREFIX):
        count = sizes.keys if prefix == PREFIX else sizes.keys // 10
        raw_put(env, [key(i, prefix) for i in range(count)], 10_000)
    return env


GET_ROUNDS = 5  # the figure is the median round, so one noisy moment on a shared machine moves it less


async def bench_get(root: Path, sizes: Sizes) -> None:
    rng = random.Random(1)
    per_round = sizes.gets // GET_ROUNDS
    picks = [key(rng.randrange(sizes.keys)) for _ in range(per_round)]
    context: dict[str, Any] = {"count": per_round * GET_ROUNDS, "keys": sizes.keys, "value_bytes": len(VALUE)}
    store = await populated_store(root / "get", sizes)
    try:
        async def get(i: int) -> None:
            if (await store.get(picks[i])).kv is None:
                raise AssertionError(f"{picks[i]!r} missing")

        for readers in (1, sizes.writers):
            clock = Timings()
            for _ in range(GET_ROUNDS):
                started = clock.start()
                await run_workers(per_round, readers, get)
                clock.stop(started)
            rate, spread = clock.rate(per_round)
            emit("get", "capstan", "gets_per_s", rate, GET_GOAL, readers=readers, **context, **spread)
    finally:
        await store.close()

    env = populated_raw(root / "raw-get", sizes)
    clock = Timings()
    for _ in range(GET_ROUNDS):
        started = clock.start()
        for k in picks:
            with env.begin() as txn:  # one read transaction per get, as a request would take
                if txn.get(k) is None:
                    raise AssertionError(f"{k!r} missing")
        clock.stop(started)
    env.close()
    rate, spread = clock.rate(per_round)
    emit("get", "raw-lmdb", "gets_per_s", rate, GET_GOAL, readers=1, **context, **spread)


async def bench_list(root: Path, sizes: Sizes) -> None:
    context: dict[str, Any] = {"keys": sizes.keys, "lists": sizes.lists, "value_bytes": len(VALUE)}
    store = await populated_store(root / "list", sizes)
    clock = Timings()
    try:
        for attempt in range(sizes.lists + 1):  # the first is a warm-up
            started = clock.start()
            page = await store.list(PREFIX)
            if attempt:
                clock.stop(started)
            if len(page.kvs) != sizes.keys or page.remaining:
                raise AssertionError(f"listed {len(page.kvs)} of {sizes.keys} keys")
    finally:
        await store.close()
    emit("list", "capstan", "ms_per_list", clock.median_ms(), LIST_GOAL, **context, **clock.ms_figures())

    env = populated_raw(root / "raw-list", sizes)
    clock = Timings()
    for attempt in range(sizes.lists + 1):
        started = clock.start()
        with env.begin() as txn:
            cursor = txn.cursor()
            cursor.set_range(PREFIX)
            found = []
            for k, v in cursor:
                if not k.startswith(PREFIX):
                    break
                found.append((k, v))
        if attempt:
            clock.stop(started)
        if len(found) != sizes.keys:
            raise AssertionError(f"raw scan found {len(found)} of {sizes.keys} keys")
    env.close()
    emit("list", "raw-lmdb", "ms_per_list", clock.median_ms(), LIST_GOAL, **context, **clock.ms_figures())


class Deliveries:
    """What the watchers received: a running total and when the last one finished."""

    def __init__(self) -> None:
        self.total = 0
        self.last_at = 0.0

    async def wait(self, consumers: list[asyncio.Task[None]], expected: int) -> bool:
        """True when every consumer finished with everything; False after a minute without it."""
        try:
            await asyncio.wait_for(asyncio.gather(*consumers), timeout=60)
        except TimeoutError:
            note(f"watch: only {self.total} of {expected} deliveries after 60 s")
            for consumer in consumers:
                consumer.cancel()
        return self.total == expected


async def bench_watch(root: Path, sizes: Sizes) -> None:
    watchers, events, path = sizes.watchers, sizes.events, root / "watch"
    expected = watchers * events
    context: dict[str, Any] = {"watchers": watchers, "events": events, "writers": sizes.writers, "sync": True}
    store = await LmdbStore.open(path, StoreOptions(sync=True))
    seen = Deliveries()
    base = store.current_revision()
    try:
        async def consume(watch: Any) -> None:
            want = base + 1
            while want <= base + events:
                batch = await watch.next_batch()
                if batch[0].revision != want or batch[-1].revision != want + len(batch) - 1:
                    raise AssertionError(f"expected revisions from {want}, got {batch[0].revision}..")
                want += len(batch)
                seen.total += len(batch)
            seen.last_at = time.perf_counter()
            watch.close()

        consumers = [asyncio.create_task(consume(store.watch(PREFIX, from_revision=base)))
                     for _ in range(watchers)]
        await asyncio.sleep(0.2)  # every watcher is parked in next_batch before the first write
        start = time.perf_counter()
        await populate(store, events, workers=sizes.writers)
        complete = await seen.wait(consumers, expected)
    finally:
        await store.close()
    txns = commits(path) - await commits_per_open(root)
    batch = max(1, round(events / max(txns, 1)))
    elapsed = (seen.last_at if complete else time.perf_counter()) - start
    emit("watch", "capstan", "deliveries_per_s", seen.total / elapsed, WATCH_GOAL,
         correct=complete, delivered=seen.total, expected=expected, mean_batch=batch, **context)
    if not complete:
        raise AssertionError(f"watchers got {seen.total} of {expected} events")

    seconds = await raw_fanout(root / "raw-watch", watchers, events, batch)
    emit("watch", "raw-lmdb", "deliveries_per_s", expected / seconds, WATCH_GOAL,
         batch=batch, fanout="asyncio.Event per watcher", **context)


async def raw_fanout(path: Path, watchers: int, events: int, batch: int) -> float:
    """The least a fan-out in Python can do: commit `batch` puts (fsync on), hand the batch to
    every watcher's list and wake it. Seconds from the first write to the last delivery."""
    env = raw_env(path, sync=True)
    pending: list[list[tuple[bytes, bytes]]] = [[] for _ in range(watchers)]
    wakeups = [asyncio.Event() for _ in range(watchers)]
    finished: list[float] = []

    async def consume(me: int) -> None:
        got = 0
        while got < events:
            await wakeups[me].wait()
            wakeups[me].clear()
            got += len(pending[me])
            pending[me] = []
        finished.append(time.perf_counter())

    consumers = [asyncio.create_task(consume(me)) for me in range(watchers)]
    await asyncio.sleep(0.2)
    start = time.perf_counter()
    for first in range(0, events, batch):
        written = [(key(i), VALUE) for i in range(first, min(events, first + batch))]
        with env.begin(write=True) as txn:
            for k, v in written:
                txn.put(k, v)
        for me in range(watchers):
            pending[me].extend(written)
            wakeups[me].set()
        await asyncio.sleep(0)  # let the watchers run, as a writer thread's commit would
    await asyncio.gather(*consumers)
    env.close()
    return max(finished) - start


CHILD = """
import asyncio, json, sys, time
path, probe = sys.argv[1], sys.argv[2].encode()
t0 = time.perf_counter()
from bench._util import max_rss_mb, rss_mb
{imports}
t1 = time.perf_counter()
rss_imported = rss_mb()
async def open_get():
{open_get}
found = asyncio.run(open_get())
t2 = time.perf_counter()
assert found, "probe key missing"
print(json.dumps({{"import_s": t1 - t0, "open_get_s": t2 - t1,
                   "rss_after_import_mb": rss_imported, "max_rss_mb": max_rss_mb()}}))
"""
CAPSTAN_CHILD = CHILD.format(
    imports="from storage import StoreOptions\nfrom storage.lmdb import LmdbStore",
    open_get="""    store = await LmdbStore.open(path, StoreOptions())
    found = (await store.get(probe)).kv is not None
    await store.close()
    return found""",
)
RAW_CHILD = CHILD.format(
    imports="import lmdb",
    open_get="""    env = lmdb.open(path, map_size=1 << 40)
    with env.begin() as txn:
        found = txn.get(probe) is not None
    env.close()
    return found""",
)


def open_in_child(code: str, path: Path, probe: bytes) -> dict[str, float]:
    """Run `code` in a fresh interpreter (a cold process over a warm page cache)."""
    done = subprocess.run([sys.executable, "-c", code, str(path), probe.decode()],
                          cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        raise AssertionError(f"child failed: {done.stderr}")
    figures: dict[str, float] = json.loads(done.stdout)
    return figures


def emit_scale(impl: str, figures: dict[str, float], **context: Any) -> None:
    rounded: dict[str, Any] = {name: round(value, 3) for name, value in figures.items()}
    emit("scale", impl, "open_first_get_s", rounded.pop("open_get_s"), OPEN_GOAL, **rounded, **context)
    emit("scale", impl, "max_rss_mb", figures["max_rss_mb"], RSS_GOAL,
         rss_after_import_mb=rounded["rss_after_import_mb"], **context)


def megabytes(path: Path) -> float:
    files = path.rglob("*") if path.is_dir() else [path]
    return round(sum(f.stat().st_size for f in files if f.is_file()) / 2**20, 1)


async def bench_scale(root: Path, sizes: Sizes) -> None:
    n, path = sizes.scale_keys, root / "scale"
    probe = key(n // 2)
    store = await LmdbStore.open(path, StoreOptions(sync=False))
    step = max(n // 10, 1)

    async def create(i: int) -> None:
        if not (await store.create(key(i), VALUE)).ok:
            raise AssertionError(f"create {key(i)!r} failed")
        if i % step == 0 and i:
            note(f"scale: {i:,} of {n:,} keys")

    start = time.perf_counter()
    try:
        await run_workers(n, sizes.build_writers, create)
    finally:
        await store.close()
    build_s = time.perf_counter() - start
    emit_scale("capstan", open_in_child(CAPSTAN_CHILD, path, probe), keys=n, value_bytes=len(VALUE),
               build_s=round(build_s, 1), build_writes_per_s=round(n / build_s), db_mb=megabytes(path))

    env = raw_env(root / "raw-scale", sync=False)
    build_s = raw_put(env, [key(i) for i in range(n)], 10_000)
    env.close()
    emit_scale("raw-lmdb", open_in_child(RAW_CHILD, root / "raw-scale", probe), keys=n,
               value_bytes=len(VALUE), build_s=round(build_s, 1), db_mb=megabytes(root / "raw-scale"))
    shutil.rmtree(root / "raw-scale")


FOLLOWED = b"/registry/configmaps/bench/"
FOLLOW_GOAL = context("CPU of a process following another's writes")
WRITER = """
import asyncio, os, sys
from storage import StoreOptions
from storage.lmdb import LmdbStore
from storage.lmdb.peers import Peers
async def main() -> None:
    store = await LmdbStore.open(sys.argv[1], StoreOptions(sync=False, compact_interval=0),
                                 peers=Peers.from_environ(os.environ))
    count, value = int(sys.argv[2]), os.urandom(int(sys.argv[3]))
    print("ready", flush=True)
    sys.stdin.readline()
    numbers = iter(range(count))
    async def write() -> None:
        for n in numbers:
            assert (await store.create(sys.argv[4].encode() + b"%08d" % n, value)).ok
    await asyncio.gather(*(write() for _ in range(16)))
    await store.close()
asyncio.run(main())
"""


async def follow(path: Path, count: int, size: int, watched: bool) -> tuple[float, int, int]:
    """Another process creates `count` keys of `size` bytes; this one follows them (watching them or not):
    this process's CPU seconds and page faults until its revision reaches the last write, and the events its
    watch read."""
    fds = [os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC) for _ in range(2)]
    store = await LmdbStore.open(path, StoreOptions(sync=False, compact_interval=0), peers=Peers(fds[0], (fds[1],)))
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(count), str(size), FOLLOWED.decode()], cwd=REPO_ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=fds, env={**os.environ, ENV: f"{fds[1]},{fds[0]}"})
    read = 0
    try:
        assert writer.stdin is not None and writer.stdout is not None
        if writer.stdout.readline() != b"ready\n":
            raise AssertionError("the writing process did not start")
        base = store.current_revision()
        # Another prefix is watched either way, as a server's caches watch theirs.
        other = store.watch(b"/registry/secrets/", from_revision=base)
        watch = store.watch(FOLLOWED, from_revision=base) if watched else None

        async def consume() -> None:
            nonlocal read
            while watch is not None and read < count:
                read += len(await watch.next_batch())

        consumer = asyncio.create_task(consume())
        cpu_before, faults_before = process_usage()
        writer.stdin.write(b"\n")
        writer.stdin.flush()
        while store.current_revision() < base + count:
            if writer.poll() is not None:
                raise AssertionError(f"the writing process ended after {store.current_revision() - base} writes")
            await asyncio.sleep(0.05)
        await asyncio.wait_for(consumer, 30)
        cpu_after, faults_after = process_usage()
        other.close()
    finally:
        if writer.stdin is not None:
            writer.stdin.close()
        if writer.wait(30):
            raise AssertionError(f"the writing process failed: {writer.returncode}")
        await store.close()
        for fd in fds:
            os.close(fd)
    return cpu_after - cpu_before, faults_after - faults_before, read


async def bench_follow(root: Path, sizes: Sizes) -> None:
    for size in sizes.follow_sizes:
        for impl, watched in (("capstan", False), ("capstan-watched", True)):
            path = root / f"follow-{size}-{impl}"
            used, faults, read = await follow(path, sizes.follows, size, watched)
            shutil.rmtree(path)
            emit("follow", impl, "cpu_us_per_write", used / sizes.follows * 1e6, FOLLOW_GOAL,
                 correct=read == (sizes.follows if watched else 0), writes=sizes.follows, value_bytes=size,
                 events_read=read, page_faults_per_write=round(faults / sizes.follows, 1))


WORKLOADS: dict[str, Callable[[Path, Sizes], Coroutine[Any, Any, None]]] = {
    "create": bench_create,
    "get": bench_get,
    "list": bench_list,
    "watch": bench_watch,
    "scale": bench_scale,
    "follow": bench_follow,
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.storage", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", default=",".join(WORKLOADS),
                        help=f"comma-separated workloads (default: all of {','.join(WORKLOADS)})")
    parser.add_argument("--scale-keys", type=int, help="keys in the scale store (default 1,000,000)")
    args = parser.parse_args(argv)
    unknown = set(args.only.split(",")) - WORKLOADS.keys()
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {','.join(WORKLOADS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.scale_keys:
        sizes = replace(sizes, scale_keys=args.scale_keys)
    return run_workloads(args.only, WORKLOADS, sizes, prefix="capstan-bench-")


if __name__ == "__main__":
    sys.exit(main())
