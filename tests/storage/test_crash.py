"""Durability: with sync=True, an acknowledged write survives SIGKILL, and so does compaction.

`StoreOptions.sync` promises that a write is on disk before the call returns. A
subprocess (crash_writer.py) writes under load and prints every acknowledgement;
we kill it without warning mid-stream, twice, reopen the store and demand every
acknowledged write with its value and revision, an unbroken run of revisions, and a
history that replays exactly.
"""

from __future__ import annotations

import asyncio
import signal
import struct
import sys
from pathlib import Path

import lmdb
import pytest

from storage import Compacted, Event, EventType, KeyValue, Store
from storage.lmdb import LmdbStore
from tests.storage.conftest import FAST, churn, revisions, take_until, within
from tests.storage.crash_writer import value_for

ROOT = Path(__file__).resolve().parents[2]  # the repository root, so `import storage` works
RUN_FOR = 0.8  # seconds of writing before each kill


async def start(mode: str, path: Path, arg: str) -> tuple[asyncio.subprocess.Process, int]:
    """Start crash_writer; returns it and the revision it opened the store at."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.storage.crash_writer",
        mode,
        str(path),
        arg,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    ready = await within(proc.stdout.readline(), 20.0)
    if not ready.startswith(b"ready "):
        await kill(proc)
        raise AssertionError(f"crash_writer did not start: {ready!r} {await within(proc.stderr.read())!r}")
    return proc, int(ready.split()[1])


async def kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGKILL)
        await within(proc.wait())
    assert proc.returncode == -signal.SIGKILL, proc.returncode


async def write_then_kill(path: Path, tag: str) -> tuple[int, dict[bytes, int]]:
    """Let crash_writer write for RUN_FOR seconds, SIGKILL it, and return (the revision
    it opened at, {key: revision} of every write it acknowledged)."""
    proc, opened_at = await start("write", path, tag)
    assert proc.stdout is not None
    output = bytearray()
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RUN_FOR
        while (left := deadline - loop.time()) > 0:
            try:
                output += await asyncio.wait_for(proc.stdout.read(1 << 16), left)
            except TimeoutError:
                break
    finally:
        await kill(proc)
    output += await within(proc.stdout.read())  # what it printed before it died
    acked: dict[bytes, int] = {}
    for line in output.decode().split("\n")[:-1]:  # the last piece is empty or cut short
        key_hex, revision = line.split()
        acked[bytes.fromhex(key_hex)] = int(revision)
    return opened_at, acked


async def assert_intact(store: Store, acked: dict[bytes, int]) -> None:
    current = store.current_revision()
    assert max(acked.values()) <= current
    for key, revision in acked.items():
        got = (await within(store.get(key))).kv
        assert got == KeyValue(key, value_for(key), revision, revision, 1), key
    listed = (await within(store.list(b"/crash/"))).kvs
    assert sorted(kv.mod_revision for kv in listed) == list(range(2, current + 1)), "revisions have a gap"
    by_revision = {kv.mod_revision: kv for kv in listed}
    for kv in listed:
        assert kv.value == value_for(kv.key)

    everything = await take_until(store.watch(b"/crash/", from_revision=0), current)
    assert revisions(everything) == list(range(2, current + 1))
    assert all(e.type is EventType.PUT and e.prev is None for e in everything)
    assert [e.kv for e in everything] == [by_revision[r] for r in range(2, current + 1)]
    middle = current // 2
    tail = await take_until(store.watch(b"/crash/", from_revision=middle), current)
    assert tail == everything[middle - 1 :]
    for revision in range(2, current + 1, max(1, current // 50)):
        kv = by_revision[revision]
        assert (await within(store.get(kv.key, at_revision=revision))).kv == kv
        assert (await within(store.get(kv.key, at_revision=revision - 1))).kv is None
    for revision in range(2, current + 1, max(1, current // 8)):
        assert (await within(store.count(b"/crash/", at_revision=revision))).count == revision - 1


async def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "crash"
    acked: dict[bytes, int] = {}
    for tag in ("first", "second"):  # the second run starts from the first one's crash
        opened_at, new = await write_then_kill(path, tag)
        assert opened_at >= max(acked.values(), default=1)
        assert len(new) > 50, f"only {len(new)} writes acknowledged in {RUN_FOR} s"
        acked.update(new)

    store = await within(LmdbStore.open(path, FAST))
    try:
        await assert_intact(store, acked)
        before = store.current_revision()
        assert (await within(store.create(b"/crash/after", b"v"))).revision == before + 1
    finally:
        await within(store.close())


def compaction_progress(path: Path) -> tuple[int, int]:
    """(compacted, compact_done) from the meta database, read beside the running process."""
    env = lmdb.open(str(path), max_dbs=8, readonly=True)
    try:
        with env.begin() as txn:
            meta = env.open_db(b"meta", txn=txn, create=False)
            compacted = txn.get(b"compacted", db=meta)
            done = txn.get(b"compact_done", db=meta)
    finally:
        env.close()
    assert compacted is not None and done is not None
    return struct.unpack(">Q", compacted)[0], struct.unpack(">Q", done)[0]


def logged_revisions(path: Path) -> list[int]:
    env = lmdb.open(str(path), max_dbs=8, readonly=True)
    try:
        with env.begin() as txn:
            log = env.open_db(b"log", txn=txn, create=False)
            return [struct.unpack(">Q", key)[0] for key, _ in txn.cursor(db=log)]
    finally:
        env.close()


async def test_interrupted_compaction_is_resumed_on_open(tmp_path: Path) -> None:
    """Compaction records its progress in the transactions that do the work (layout.py),
    so a SIGKILL half-way leaves a store that opens, finishes the job and reads exactly."""
    path = tmp_path / "compact"
    store = await within(LmdbStore.open(path, FAST))
    events: dict[int, Event] = {}
    writers = (churn(store, [b"/c/%d/%d" % (w, i) for i in range(10)], 200, seed=w) for w in range(10))
    for part in await within(asyncio.gather(*writers)):
        events.update(part)
    current = store.current_revision()
    target = current - 100
    states = {r: list((await within(store.list(b"", at_revision=r))).kvs) for r in range(target, current + 1)}
    await within(store.close())

    proc, _ = await start("compact", path, str(target))
    try:
        while compaction_progress(path)[1] == 0:  # kill it as soon as the first batch is done
            await asyncio.sleep(0.001)
    finally:
        await kill(proc)
    compacted, done = compaction_progress(path)
    assert compacted == target and 0 < done < target, "the compaction was not interrupted half-way"

    reopened = await within(LmdbStore.open(path, FAST))
    try:
        assert (reopened.current_revision(), reopened.compacted_revision()) == (current, target)
        for revision, state in states.items():
            assert list((await within(reopened.list(b"", at_revision=revision))).kvs) == state
        with pytest.raises(Compacted):
            await within(reopened.list(b"", at_revision=target - 1))
        replayed = await take_until(reopened.watch(b"/c/", from_revision=target), current)
        assert replayed == [events[r] for r in range(target + 1, current + 1)]
    finally:
        await within(reopened.close())
    # What is left on disk: every key's writes after the target, and its newest one at or
    # before it unless that is a delete.
    kept = {r for r in events if r > target}
    for key in {e.kv.key for e in events.values()}:
        older = [e for r, e in sorted(events.items()) if r <= target and e.kv.key == key]
        if older and older[-1].type is EventType.PUT:
            kept.add(older[-1].revision)
    assert logged_revisions(path) == sorted(kept)
