"""Several processes serving one LMDB environment: one total order of revisions, and watches that see every
process's writes in that order, with no gap or duplicate, woken across processes (storage/lmdb/peers.py).

This test process is one of the peers (it watches and writes); the others are tests/storage/peer_process.py,
real processes writing the same environment with fsync, printing each acknowledged write.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from storage import Compacted, Event, EventType, QuotaExceeded, StoreOptions, Watch
from storage.lmdb import LmdbStore
from storage.lmdb.peers import ENV, Peers
from tests.storage.conftest import within

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = StoreOptions(sync=True, compact_interval=0)


def eventfds(count: int) -> list[int]:
    return [os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC) for _ in range(count)]


def peers_env(fds: list[int], index: int) -> dict[str, str]:
    order = [fds[index], *(fd for i, fd in enumerate(fds) if i != index)]
    return {**os.environ, ENV: ",".join(map(str, order))}


class Peer:
    """A peer_process: its acknowledged writes as {key: revision}, read from its output."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.acked: dict[bytes, int] = {}

    @classmethod
    async def start(cls, mode: str, path: Path, tag: str, count: int, fds: list[int], index: int) -> Peer:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.storage.peer_process", mode, str(path), tag, str(count),
            cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, pass_fds=fds,
            env=peers_env(fds, index))
        assert proc.stdout is not None
        ready = await within(proc.stdout.readline(), 30.0)
        assert ready.startswith(b"ready "), ready
        return cls(proc)

    async def read_until(self, word: bytes) -> bytes:
        """Record acknowledgements until a line starting with `word` (returned) or the end (b"")."""
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line or line.startswith(word):
                return line
            key, revision = line.split()
            self.acked[key] = int(revision)

    async def finish(self) -> None:
        assert self.proc.stdin is not None
        if self.proc.returncode is None:
            self.proc.stdin.write(b"\n")
            await self.proc.stdin.drain()
        await within(self.proc.wait())

    async def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        await within(self.proc.wait())


@asynccontextmanager
async def peered_store(path: Path, fds: list[int]) -> AsyncIterator[LmdbStore]:
    store = await LmdbStore.open(path, OPTIONS, peers=Peers(fds[0], tuple(fds[1:])))
    try:
        yield store
    finally:
        await store.close()


async def collect(watch: Watch, through: int) -> list[Event]:
    """The watch's events up to revision `through`."""
    events: list[Event] = []
    while not events or events[-1].revision < through:
        events.extend(await within(watch.next_batch()))
    return events


def check_total_order(events: list[Event], base: int, acked: dict[bytes, int]) -> None:
    """Every revision after `base` exactly once, in order, and each acknowledged write at its revision."""
    assert [e.revision for e in events] == list(range(base + 1, base + 1 + len(events)))
    seen = {e.kv.key: e.revision for e in events}
    assert all(e.type is EventType.PUT and e.kv.value == e.kv.key[::-1] for e in events)
    assert {key: seen.get(key) for key in acked} == acked


@pytest.mark.parametrize("writers, count, own_writes", [(1, 300, 0), (2, 300, 200), (3, 150, 150)])
async def test_writes_of_every_process_are_one_order_and_every_watch_sees_them(
        tmp_path: Path, writers: int, count: int, own_writes: int) -> None:
    fds = eventfds(writers + 1)
    async with peered_store(tmp_path, fds) as store:
        base = store.current_revision()
        watch = store.watch(b"/peers/", from_revision=base)
        peers = [await Peer.start("write", tmp_path, f"p{i}", count, fds, i + 1) for i in range(writers)]

        async def own() -> dict[bytes, int]:
            results = {}
            for n in range(own_writes):
                key = b"/peers/own/%08d" % n
                results[key] = (await store.create(key, key[::-1])).revision
            return results

        mine = asyncio.ensure_future(own())
        await within(asyncio.gather(mine, *(peer.read_until(b"done") for peer in peers)), 60.0)
        acked = mine.result()
        for peer in peers:
            acked.update(peer.acked)
        total = writers * count + own_writes
        assert len(acked) == total
        assert sorted(acked.values()) == list(range(base + 1, base + 1 + total))  # distinct and contiguous
        events = await collect(watch, base + total)
        check_total_order(events, base, acked)
        assert store.current_revision() == base + total
        # A watch opened now from the start replays the same history.
        check_total_order(await collect(store.watch(b"/peers/", from_revision=base), base + total), base, acked)
        for peer in peers:
            await peer.finish()


QUOTA = 256 << 10


@pytest.mark.parametrize("own_first", [0, 1, 20])
async def test_the_quota_counts_what_other_processes_wrote(tmp_path: Path, own_first: int) -> None:
    """A process's writer bounds the size in use from its own writes only while nobody else has written: once
    another process has filled the store past the quota, this one's next write is refused, whatever it wrote
    before (storage/lmdb/writer.py)."""
    fds = eventfds(2)
    store = await LmdbStore.open(tmp_path, StoreOptions(sync=True, compact_interval=0, quota_bytes=QUOTA),
                                 peers=Peers(fds[0], (fds[1],)))
    try:
        for n in range(own_first):
            assert (await within(store.create(b"/own/%04d" % n, b"v" * 100))).ok
        assert store.size_bytes() < QUOTA // 4
        peer = await Peer.start("write", tmp_path, "p0", 3000, fds, 1)  # writes with no quota of its own
        await within(peer.read_until(b"done"), 60.0)
        assert store.size_bytes() > QUOTA
        with pytest.raises(QuotaExceeded) as refused:
            await within(store.create(b"/own/after", b"v" * 100))
        assert refused.value.size > QUOTA
        await peer.finish()
    finally:
        await store.close()


@pytest.mark.parametrize("watched", [b"/peers/p0/", b"/peers/p1/", b"/elsewhere/"])
async def test_writes_nobody_here_watches_are_passed_over_and_replayed_later(tmp_path: Path, watched: bytes) -> None:
    """Others' writes that no watch of this process takes are passed over (their values not read from the log),
    yet the revision follows them: a live watch of the written keys gets every one, and a watch opened afterwards
    replays them all."""
    fds = eventfds(3)
    async with peered_store(tmp_path, fds) as store:
        base = store.current_revision()
        watch = store.watch(watched, from_revision=base)
        got: list[Event] = []

        async def read() -> None:
            while True:
                got.extend(await watch.next_batch())

        reading = asyncio.ensure_future(read())
        await asyncio.sleep(0.05)  # past the (empty) replay: what follows arrives live
        peers = [await Peer.start("write", tmp_path, f"p{i}", 200, fds, i + 1) for i in range(2)]
        await within(asyncio.gather(*(peer.read_until(b"done") for peer in peers)), 60.0)
        acked = {**peers[0].acked, **peers[1].acked}
        total = base + len(acked)

        async def handed_out() -> None:
            while store.current_revision() < total or watch.progress() < total:
                await asyncio.sleep(0.01)

        await within(handed_out())
        reading.cancel()
        assert [(e.kv.key, e.revision) for e in got] == sorted(
            ((key, revision) for key, revision in acked.items() if key.startswith(watched)), key=lambda kr: kr[1])
        check_total_order(await collect(store.watch(b"/peers/", from_revision=base), total), base, acked)
        for peer in peers:
            await peer.finish()


async def test_a_process_killed_under_writes_loses_nothing_acknowledged(tmp_path: Path) -> None:
    fds = eventfds(3)
    async with peered_store(tmp_path, fds) as store:
        base = store.current_revision()
        watch = store.watch(b"/peers/", from_revision=base)
        events: list[Event] = []  # read as they come: unread, the writers' pace would pass the watcher's bound

        async def follow() -> None:
            while True:
                events.extend(await watch.next_batch())

        following = asyncio.ensure_future(follow())
        victim = await Peer.start("write", tmp_path, "victim", 0, fds, 1)
        other = await Peer.start("write", tmp_path, "other", 0, fds, 2)
        reading = [asyncio.ensure_future(peer.read_until(b"done")) for peer in (victim, other)]
        await asyncio.sleep(0.6)
        await victim.kill()
        await asyncio.sleep(0.3)
        await other.kill()
        await asyncio.gather(*reading)
        assert len(victim.acked) > 0 and len(other.acked) > 0
        acked = {**victim.acked, **other.acked}
        for key, revision in acked.items():
            assert (await store.get(key)).kv.mod_revision == revision  # type: ignore[union-attr]
        # The dead processes held no lock that outlives them: a new one writes, and this one sees every write
        # in one order (a process killed after a commit and before its wake-ups is made up for by the next
        # process's start, which wakes every peer).
        again = await Peer.start("write", tmp_path, "again", 50, fds, 1)
        await again.read_until(b"done")
        through = max(again.acked.values())

        async def caught_up() -> None:
            while not events or events[-1].revision < through:
                await asyncio.sleep(0.01)

        await within(caught_up())
        following.cancel()
        acked.update(again.acked)
        assert [e.revision for e in events] == list(range(base + 1, events[-1].revision + 1))
        seen = {e.kv.key: e.revision for e in events}
        assert {key: seen.get(key) for key in acked} == acked
        await again.finish()

async def test_a_process_behind_the_compacted_revision_ends_its_watches(tmp_path: Path) -> None:
    fds = eventfds(2)
    async with peered_store(tmp_path, fds) as store:
        watch = store.watch(b"/peers/", from_revision=store.current_revision())
        # This process's loop is held while the other writes and compacts past what it published.
        env = peers_env(fds, 1)
        subprocess.run([sys.executable, "-m", "tests.storage.peer_process", "compact", str(tmp_path), "c", "20"],
                       cwd=ROOT, input=b"\n", stdout=subprocess.DEVNULL, pass_fds=fds, env=env, check=True,
                       timeout=60)
        with pytest.raises(Compacted):
            await collect(watch, store.current_revision() + 20)
        # From the current revision on, it follows the other process again.
        start = store.current_revision()
        assert start == (await store.get(b"/none")).revision
        watch = store.watch(b"/peers/", from_revision=start)
        peer = await Peer.start("write", tmp_path, "d", 30, fds, 1)
        await peer.read_until(b"done")
        check_total_order(await collect(watch, start + 30), start, peer.acked)
        await peer.finish()

