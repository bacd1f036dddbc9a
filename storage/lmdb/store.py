"""The LMDB backend of the Store protocol.

Reads run synchronously on the event loop thread, each in its own short read
transaction (LMDB readers never block and never wait for the writer); a long list
reads one snapshot a slice per transaction, yielding between; writes go
through the group-commit writer thread. See layout.py for what is stored where.

Several processes may serve one environment (`peers`, storage/lmdb/peers.py). Then each publishes to its
watchers every process's writes, in revision order, from one position: `_published`, the newest revision
whose events it has handed to its broadcaster. Its own batch is published from memory when it comes next;
anything else (another process's writes, or its own after those) is read from the log, from `_published` on,
when a peer's wake-up arrives or its own commit finds a gap. The clock follows `_published`, so a watch's
progress never passes an event not yet handed out. A process that fell behind the compacted revision cannot
read what it missed: its watchers end with Compacted (their clients re-list, 410 Expired) and it goes on from
the current revision.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lmdb

from storage import validate
from storage.broadcast import Broadcaster
from storage.clock import RevisionClock
from storage.compactor import AutoCompactor
from storage.errors import BackendFailure, Compacted, InvalidArgument, StorageError, StoreClosed
from storage.lmdb import compact, layout, reader
from storage.lmdb.env import Databases, adopt_map_size, open_env, size
from storage.lmdb.peers import Peers
from storage.lmdb.writer import CREATE, DELETE, UPDATE, Job, WriteOp, Writer
from storage.options import StoreOptions
from storage.types import CountResult, Event, GetResult, KeyValue, ListResult, WriteResult
from storage.watch import HistoryPage, ReplayingWatch

log = logging.getLogger(__name__)

HEADER = layout.HEADER
HEADER_SIZE = layout.HEADER.size
# Keys a list reads, and keys it counts past its limit, per read transaction: each is a few milliseconds
# of the event loop at most, whatever the collection's size.
LIST_SLICE = 500
COUNT_SLICE = 2_000
# Log entries of other processes' writes read per read transaction while catching up.
TAIL_SLICE = 1_000


class LmdbStore:
    def __init__(
        self, dbs: Databases, options: StoreOptions, loop: asyncio.AbstractEventLoop, peers: Peers | None = None
    ) -> None:
        self._dbs = dbs
        self._options = options
        self._closed = False
        self._peers = peers
        self._loop = loop
        with dbs.env.begin() as txn:
            revision, self._compacted = reader.revision(txn, dbs), reader.compacted(txn, dbs)
        self._clock = RevisionClock(revision)
        self._published = revision
        self._broadcaster = Broadcaster(options.watch_queue_size)
        self._writer = Writer(
            dbs, loop, max_batch=options.max_batch, quota=options.quota_bytes, on_commit=self._committed,
            on_durable=None if peers is None else peers.notify,
        )
        self._compactor = AutoCompactor(self, options)
        self._compact_lock = asyncio.Lock()

    @classmethod
    async def open(
        cls, path: str | Path, options: StoreOptions | None = None, *, peers: Peers | None = None
    ) -> LmdbStore:
        """Open the store in directory `path`; an unfinished compaction is resumed.

        With `peers`, other processes serve the same environment: each is woken after this one commits, and
        this one publishes their writes to its watchers when woken."""
        options = options or StoreOptions()
        map_size = None
        if peers is not None:  # every process maps the same, large enough that none grows it under the others
            map_size = max(options.initial_map_size, 2 * (options.quota_bytes or 0))
        store = cls(open_env(Path(path), options, map_size=map_size), options, asyncio.get_running_loop(), peers)
        store._writer.start()
        if peers is not None:
            peers.drain()
            store._loop.add_reader(peers.own, store._woken)
            store._catch_up()  # what was committed between reading the revision and listening
            peers.notify()  # a process that died between a commit and its wake-ups left the others unaware
        await store._finish_compaction()
        store._compactor.start()
        return store

    # -- reads -------------------------------------------------------------

    def _read(self, fn: Any, *args: Any, buffers: bool = False) -> Any:
        """Run fn(txn, dbs, *args) in a fresh read transaction; with `buffers`, one whose reads are memoryviews
        into the map, valid only within it (fn copies out what it returns)."""
        if self._closed:
            raise StoreClosed("the store is closed")
        try:
            try:
                with self._dbs.env.begin(buffers=buffers) as txn:
                    return fn(txn, self._dbs, *args)
            except lmdb.MapResizedError:
                self._adopt_map_size()
                with self._dbs.env.begin(buffers=buffers) as txn:
                    return fn(txn, self._dbs, *args)
        except lmdb.Error as err:
            raise BackendFailure(f"read failed: {err}") from err

    def _adopt_map_size(self) -> None:
        """Another process grew the map: take its size, with the writer thread outside any transaction."""
        with self._writer.map_lock:
            adopt_map_size(self._dbs)

    def recent(self, key: bytes) -> KeyValue | None:
        return None  # a get is local and as cheap: nothing to remember

    async def get(self, key: bytes, *, at_revision: int | None = None) -> GetResult:
        validate.check_key(key)
        if at_revision is None and not self._closed:
            # The hot path, inlined: one read transaction, two lookups.
            dbs = self._dbs
            try:
                with dbs.env.begin() as txn:
                    revision = layout.unrev(txn.get(layout.META_REVISION, db=dbs.meta))
                    data = txn.get(key, db=dbs.kv)
            except lmdb.MapResizedError:
                revision, kv = self._read(_get, key, None)
                return GetResult(revision, kv)
            except lmdb.Error as err:
                raise BackendFailure(f"read failed: {err}") from err
            if data is None:
                return GetResult(revision, None)
            create, mod, version = HEADER.unpack_from(data)
            return GetResult(revision, KeyValue(key, data[HEADER_SIZE:], create, mod, version))
        wanted = validate.check_read_revision(at_revision)
        if wanted is not None:
            await self._wait(wanted)
        revision, kv = self._read(_get, key, wanted)
        return GetResult(revision, kv)

    async def list(
        self,
        prefix: bytes,
        *,
        at_revision: int | None = None,
        start_after: bytes | None = None,
        limit: int | None = None,
        counted: bool = True,
        values: bool = True,
    ) -> ListResult:
        validate.check_prefix(prefix)
        after = validate.check_start_after(start_after)
        lim = validate.check_limit(limit)
        wanted = validate.check_read_revision(at_revision)
        if wanted is not None:
            await self._wait(wanted)
        # One snapshot, read a slice per read transaction so that no read holds the event loop for long:
        # the first slice fixes the revision and the others read at it (Compacted if it goes meanwhile).
        kvs: builtins.list[KeyValue] = []
        while True:
            want = LIST_SLICE if lim is None else min(LIST_SLICE, lim - len(kvs))
            # without values, in a transaction with buffers: the values stay in the map
            wanted, (page, more) = self._read(_list, prefix, wanted, after, want, values, buffers=not values)
            kvs += page
            if not more:
                return ListResult(wanted, kvs, 0)
            after = page[-1].key
            if lim is not None and len(kvs) == lim:
                break
            await asyncio.sleep(0)
        if not counted:
            return ListResult(wanted, kvs, 1)  # more follow (list_latest/list_at saw the next key)
        remaining = 0
        while after is not None:
            await asyncio.sleep(0)
            counted, after = self._read(_count_after, prefix, wanted, after, COUNT_SLICE)
            remaining += counted
        return ListResult(wanted, kvs, remaining)

    async def count(self, prefix: bytes, *, at_revision: int | None = None) -> CountResult:
        validate.check_prefix(prefix)
        wanted = validate.check_read_revision(at_revision)
        if wanted is not None:
            await self._wait(wanted)
        revision, n = self._read(_count, prefix, wanted)
        return CountResult(revision, n)

    async def _wait(self, revision: int) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")
        await self._clock.wait_for(revision, self._options.future_wait)

    # -- writes ------------------------------------------------------------

    async def create(self, key: bytes, value: bytes) -> WriteResult:
        return await self._submit(CREATE, validate.check_key(key), validate.check_value(value), None)

    async def update(
        self, key: bytes, value: bytes, *, expected_mod_revision: int | None = None
    ) -> WriteResult:
        return await self._submit(
            UPDATE,
            validate.check_key(key),
            validate.check_value(value),
            validate.check_expected(expected_mod_revision),
        )

    async def delete(self, key: bytes, *, expected_mod_revision: int | None = None) -> WriteResult:
        return await self._submit(
            DELETE, validate.check_key(key), b"", validate.check_expected(expected_mod_revision)
        )

    async def _submit(self, kind: int, key: bytes, value: bytes, expected: int | None) -> WriteResult:
        if self._closed:
            raise StoreClosed("the store is closed")
        future: asyncio.Future[WriteResult] = asyncio.get_running_loop().create_future()
        self._writer.submit(WriteOp(kind, key, value, expected, future))
        return await future

    def _committed(
        self, revision: int, results: builtins.list[tuple[WriteOp, WriteResult]], events: builtins.list[Event]
    ) -> None:
        """On the loop, after a batch is durable: publish everything up to it in order, then acknowledge."""
        if self._peers is None:
            self._clock.advance(revision)
            for op, result in results:
                if not op.future.done():
                    op.future.set_result(result)
            self._broadcaster.publish(events)
            return
        if events and events[0].revision == self._published + 1:
            self._publish(events)
        if self._published < revision:
            self._catch_up()  # others' writes came before this batch (and then the batch itself, from the log)
        for op, result in results:
            if not op.future.done():
                op.future.set_result(result)

    def _publish(self, events: Sequence[Event]) -> None:
        self._broadcaster.publish(events)
        self._published = events[-1].revision
        self._clock.advance(self._published)

    def _woken(self) -> None:
        """A peer committed (on the loop, from the eventfd's readiness)."""
        assert self._peers is not None
        if self._peers.drain() and not self._closed:
            self._catch_up()

    def _catch_up(self) -> None:
        """Publish every committed write after `_published`, read from the log a slice per read transaction.

        Writes no watcher of this process would be given are passed over unread: the broadcaster drops them, and
        a watch that starts later replays them from the log."""
        while not self._closed:
            try:
                tail: _Tail = self._read(_tail, self._published, TAIL_SLICE, self._broadcaster.wants,
                                         buffers=True)
            except StorageError:
                log.exception("reading the log of other processes' writes failed; retried at the next wake-up")
                return
            self._compacted = max(self._compacted, tail.compacted)
            if tail.behind:
                # What this process missed is compacted away: its watchers cannot be told it, so they end,
                # and their clients re-list (410), as after any watch from a compacted revision.
                log.warning("fell behind the compacted revision %d at %d: ending this process's watches",
                            tail.compacted, self._published)
                self._broadcaster.fail_all(Compacted(self._published, tail.compacted))
                self._published = tail.current
                self._clock.advance(tail.current)
                return
            self._broadcaster.publish(tail.events)
            self._published = max(self._published, tail.through)
            self._clock.advance(self._published)
            if tail.through >= tail.current:
                return

    # -- watch -------------------------------------------------------------

    def watch(self, prefix: bytes, *, from_revision: int) -> ReplayingWatch:
        validate.check_prefix(prefix)
        validate.check_watch_revision(from_revision)
        if self._closed:
            raise StoreClosed("the store is closed")
        return ReplayingWatch(
            source=self,
            clock=self._clock,
            subscriber=self._broadcaster.subscribe(prefix),
            from_revision=from_revision,
            future_wait=self._options.future_wait,
        )

    def read_history(self, prefix: bytes, after: int, limit: int) -> HistoryPage:
        page: HistoryPage = self._read(_history, prefix, after, limit, buffers=True)
        return page

    # -- compaction and lifecycle --------------------------------------------

    async def compact(self, revision: int) -> int:
        validate.check_read_revision(revision)
        if self._closed:
            raise StoreClosed("the store is closed")
        current = self._clock.revision
        if revision > current:
            raise InvalidArgument(f"cannot compact to {revision}, beyond the current revision {current}")
        async with self._compact_lock:
            # A reader another process left when it died (a `capstan snapshot save` killed midway) would pin
            # every page freed after its snapshot, and the file would grow until a restart: clear it here.
            try:
                self._dbs.env.reader_check()
            except lmdb.Error as err:
                raise BackendFailure(f"clearing the readers of dead processes failed: {err}") from err
            if await self._job(lambda txn: compact.mark(txn, self._dbs, revision)):
                self._compacted = revision
            await self._finish_compaction()
        return self._clock.revision

    async def _finish_compaction(self) -> None:
        batch = self._options.compact_batch
        while not await self._job(lambda txn: compact.step(txn, self._dbs, batch)):
            pass

    async def _job(self, fn: Any) -> Any:
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._writer.submit(Job(fn, future))
        return await future

    def current_revision(self) -> int:
        return self._clock.revision

    def compacted_revision(self) -> int:
        return self._compacted

    def size_bytes(self) -> int:
        used: int = self._read(size)
        return used

    def quota_bytes(self) -> int | None:
        return self._options.quota_bytes

    async def close(self) -> None:
        """Stop the compactor, commit what was submitted, end watches, close LMDB."""
        if self._closed:
            return
        await self._compactor.stop()
        await self._writer.stop()
        await asyncio.sleep(0)  # let the writer's last acknowledgements run
        if self._peers is not None:
            self._loop.remove_reader(self._peers.own)
        self._closed = True
        self._clock.close()
        self._broadcaster.close()
        self._dbs.env.close()


def _get(txn: Any, dbs: Databases, key: bytes, wanted: int | None) -> tuple[int, KeyValue | None]:
    revision = reader.revision(txn, dbs)
    if wanted is None or wanted == revision:
        return revision, reader.latest(txn, dbs, key)
    _check_past(txn, dbs, wanted)
    return wanted, reader.at(txn, dbs, key, wanted)


def _list(
    txn: Any, dbs: Databases, prefix: bytes, wanted: int | None, after: bytes | None, limit: int, values: bool = True
) -> tuple[int, tuple[list[KeyValue], bool]]:
    """A page at `wanted` (None: the latest revision); values=False: every value b"", for a transaction with
    buffers, out of which only the values of keys written since a past revision are copied (read from the log)."""
    revision = reader.revision(txn, dbs)
    if wanted is None or wanted == revision:
        latest = reader.list_latest if values else reader.list_latest_heads
        return revision, latest(txn, dbs, prefix, after, limit)
    _check_past(txn, dbs, wanted)
    return wanted, reader.list_at(txn, dbs, prefix, wanted, after, limit, values=values)


def _count_after(
    txn: Any, dbs: Databases, prefix: bytes, wanted: int, after: bytes, budget: int
) -> tuple[int, bytes | None]:
    if wanted == reader.revision(txn, dbs):
        return reader.count_latest_after(txn, dbs, prefix, after, budget)
    _check_past(txn, dbs, wanted)
    return reader.count_at_after(txn, dbs, prefix, wanted, after, budget)


def _count(txn: Any, dbs: Databases, prefix: bytes, wanted: int | None) -> tuple[int, int]:
    revision = reader.revision(txn, dbs)
    if wanted is None or wanted == revision:
        return revision, reader.count_latest(txn, dbs, prefix)
    _check_past(txn, dbs, wanted)
    return wanted, len(reader.list_at(txn, dbs, prefix, wanted, None, None)[0])


@dataclass(frozen=True, slots=True)
class _Tail:
    """Committed writes after a revision, from one snapshot."""

    events: Sequence[Event]  # every wanted write in (after, through], in order
    through: int  # the last revision read: the next slice starts after it; the current one when all are read
    current: int  # the snapshot's current revision
    compacted: int
    behind: bool  # `after` is below the compacted revision: the writes after it may be gone from the log


def _tail(txn: Any, dbs: Databases, after: int, limit: int, wanted: Callable[[bytes], bool]) -> _Tail:
    current, compacted = reader.revision(txn, dbs), reader.compacted(txn, dbs)
    if after < compacted:
        return _Tail((), current, current, compacted, True)
    if after >= current:
        return _Tail((), current, current, compacted, False)
    events, through = reader.history(txn, dbs, b"", after, limit, current, wanted)
    return _Tail(events, through, current, compacted, False)


def _history(txn: Any, dbs: Databases, prefix: bytes, after: int, limit: int) -> HistoryPage:
    _check_past(txn, dbs, after)
    revision = reader.revision(txn, dbs)
    events, through = reader.history(txn, dbs, prefix, after, limit, revision)
    return HistoryPage(events, through, through >= revision)


def _check_past(txn: Any, dbs: Databases, wanted: int) -> None:
    compacted = reader.compacted(txn, dbs)
    if wanted < compacted:
        raise Compacted(wanted, compacted)
