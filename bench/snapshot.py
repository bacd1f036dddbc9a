"""How long backing up, checking, restoring and defragmenting an LMDB store of 100,000 objects take, and the
sizes before and after.

    python -m bench.snapshot [--quick] [--objects N]

The store is built with the store's own writes (fsync off, 64 writers): N objects of 1 KiB under one prefix,
then a fifth of them updated and a tenth deleted, then compacted to the current revision, so the data file has
history and free pages as a served store does. Then, each timed once:

  save     `capstan snapshot save`'s work (storage/lmdb/snapshot.py): the compacting copy from one read
           transaction, the verification of every value in the copy, the SHA-256: seconds, and the snapshot's
           size against the data file's.
  status   the hash check and the verification of every value of the snapshot file: seconds.
  check    `capstan check` on the data directory (what a verification at every start would cost): seconds.
  restore  a new data directory from the snapshot, verified first: seconds.
  defrag   `capstan defrag` of the data directory: seconds, the data file's size before and after.
  load     `capstan snapshot save` run as its own process while 64 writers create objects with fsync on:
           durable writes/s during the save beside the same writers with no save, and the save's seconds.
  crc32    what a checksum per stored value would cost instead (zlib.crc32 of a 1 KiB value, once per write
           and once per read): microseconds per value, beside a get of the store.

Stdout is one JSON line per figure (bench/_util.py); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from bench._util import context, emit, note
from storage import StoreOptions
from storage.lmdb import LmdbStore
from storage.lmdb import snapshot as snapshots
from storage.lmdb.integrity import Report

VALUE = os.urandom(1024)
PREFIX = b"/registry/configmaps/bench/"
WRITERS = 64
OPTIONS = StoreOptions(sync=False, compact_interval=0)
INFO = context("measured")


async def build(directory: Path, objects: int) -> tuple[int, float]:
    """The store described in the module docstring; its revision and the get time (µs) measured on it."""
    store = await LmdbStore.open(directory, OPTIONS)
    try:
        async def writer(start: int) -> None:
            for i in range(start, objects, WRITERS):
                await store.create(PREFIX + b"%08d" % i, VALUE)
            for i in range(start, objects // 5, WRITERS):
                await store.update(PREFIX + b"%08d" % i, VALUE[::-1])
            for i in range(objects // 5 + start, objects // 5 + objects // 10, WRITERS):
                await store.delete(PREFIX + b"%08d" % i)

        await asyncio.gather(*(writer(w) for w in range(WRITERS)))
        await store.compact(store.current_revision())
        started = time.perf_counter()
        gets = min(objects, 20_000)
        for i in range(gets):
            await store.get(PREFIX + b"%08d" % i)
        get_us = (time.perf_counter() - started) / gets * 1e6
        return store.current_revision(), get_us
    finally:
        await store.close()


async def writes_per_s(directory: Path, seconds: float | None, during: list[str] | None) -> tuple[float, float]:
    """Durable creates/s by WRITERS writers for `seconds`, or for as long as the command `during` runs (then
    also its seconds)."""
    store = await LmdbStore.open(directory, StoreOptions(sync=True, compact_interval=0))
    done = asyncio.Event()
    count = 0

    async def writer(w: int) -> None:
        nonlocal count
        n = 0
        while not done.is_set():
            await store.create(b"/registry/configmaps/load/%02d-%08d-%d" % (w, n, len(during or ())), VALUE)
            n += 1
            count += 1

    try:
        tasks = [asyncio.create_task(writer(w)) for w in range(WRITERS)]
        await asyncio.sleep(0.2)
        started, before = time.perf_counter(), count
        if during is None:
            assert seconds is not None
            await asyncio.sleep(seconds)
        else:
            proc = await asyncio.create_subprocess_exec(*during, stdout=subprocess.DEVNULL)
            if await proc.wait() != 0:
                raise RuntimeError(f"{' '.join(during)} failed")
        elapsed = time.perf_counter() - started
        rate = (count - before) / elapsed
        done.set()
        await asyncio.gather(*tasks)
        return rate, elapsed
    finally:
        await store.close()


def timed(fn: object, *args: object) -> tuple[object, float]:
    started = time.perf_counter()
    result = fn(*args)  # type: ignore[operator]
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small store, for the smoke test")
    parser.add_argument("--objects", type=int, default=None, help="objects in the store (default 100,000)")
    args = parser.parse_args()
    objects = args.objects or (2_000 if args.quick else 100_000)
    root = Path(tempfile.mkdtemp(prefix="capstan-bench-snapshot-"))
    try:
        data = root / "data" / "lmdb"
        note(f"building a store of {objects} objects")
        revision, get_us = asyncio.run(build(data, objects))
        live = objects - objects // 10
        data_size = os.path.getsize(data / "data.mdb")
        snap = root / "snapshot.db"

        saved, seconds = timed(snapshots.save, data, snap)
        assert isinstance(saved, snapshots.Snapshot)
        correct = saved.report.revision == revision and saved.report.objects == live
        emit("save", "capstan", "seconds", seconds, INFO, correct=correct, objects=saved.report.objects,
             revision=saved.report.revision, snapshot_bytes=saved.size, data_file_bytes=data_size)

        status, seconds = timed(snapshots.status, snap)
        assert isinstance(status, snapshots.Snapshot)
        emit("status", "capstan", "seconds", seconds, INFO, correct=status.report == saved.report,
             objects=status.report.objects)

        checked, seconds = timed(snapshots.check, data)
        assert isinstance(checked, Report)
        emit("check", "capstan", "seconds", seconds, INFO, correct=checked.objects == live,
             objects=checked.objects, log_entries=checked.log_entries)

        restored_dir = root / "restored" / "lmdb"
        restored, seconds = timed(snapshots.restore, snap, restored_dir)
        assert isinstance(restored, snapshots.Snapshot)
        emit("restore", "capstan", "seconds", seconds, INFO,
             correct=snapshots.check(restored_dir).hash == saved.report.hash, objects=restored.report.objects)

        sizes, seconds = timed(snapshots.defrag, data)
        assert isinstance(sizes, tuple)
        before, after = sizes
        emit("defrag", "capstan", "seconds", seconds, INFO, correct=snapshots.check(data).hash == checked.hash,
             before_bytes=before, after_bytes=after)

        save = [sys.executable, "-m", "capstan", "snapshot", "save", str(root / "loaded.db"), "--data-dir",
                str(data.parent)]
        during, seconds = asyncio.run(writes_per_s(data, None, save))
        alone, _ = asyncio.run(writes_per_s(data, seconds, None))
        emit("load", "capstan", "writes_per_s", during, INFO, alone_writes_per_s=round(alone, 1),
             save_seconds=round(seconds, 3), snapshot_bytes=os.path.getsize(root / "loaded.db"))

        rounds = 200_000
        started = time.perf_counter()
        for _ in range(rounds):
            zlib.crc32(VALUE)
        crc_us = (time.perf_counter() - started) / rounds * 1e6
        emit("crc32", "zlib", "us_per_value", crc_us, INFO, value_bytes=len(VALUE), store_get_us=round(get_us, 2))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
