"""Group commit: one thread applies queued writes in batches, one fsync per batch.

Callers on the event loop submit a write and await its future. The writer thread
takes everything queued (up to `max_batch`), applies it in one LMDB transaction
— each successful write getting the next revision — commits (fsync when durable),
and only then resolves the futures and publishes the events, in one callback on
the loop. So an acknowledged write is on disk, and concurrent writers share the
cost of the fsync. Maintenance jobs (compaction steps) run on the same thread
between batches, one bounded transaction each, so writers wait at most one step.

The quota is enforced here, per write, in the batch's transaction: the size in use when the
batch starts, plus the cost of the puts accepted before it in the batch, plus its own cost must
stay within the quota, else that write alone fails with QuotaExceeded (deletes always pass).
The size in use is measured from the databases' page counts, except while an upper bound of it keeps
the batch below half the quota: the last measure plus GROWTH times the bytes this process has written since,
taken only while no other process has written (the revision is the one this process last committed).
Such a batch could not be refused either way, so the answers are the same.

Several processes may write one environment (storage/lmdb/peers.py): LMDB's write lock serialises their
transactions, and each batch reads the current revision inside its own transaction, so every process's writes
take the next revisions of one total order. After a commit with writes, `on_durable` runs on this thread (to
wake the other processes) before the loop hears of it. When another process has grown the map, a transaction
here fails with MapResizedError until this process adopts the new size, which happens on the loop (as growing
does) with this thread outside any transaction (`map_lock`).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import lmdb

from storage.errors import BackendFailure, QuotaExceeded, StoreClosed
from storage.lmdb import layout, reader
from storage.lmdb.env import Databases, adopt_map_size, grow, size, write_failure
from storage.types import Event, EventType, KeyValue, Outcome, WriteResult

log = logging.getLogger(__name__)

CREATE, UPDATE, DELETE = 1, 2, 3


@dataclass(slots=True)
class WriteOp:
    kind: int
    key: bytes
    value: bytes
    expected: int | None
    future: asyncio.Future[WriteResult]


@dataclass(slots=True)
class Job:
    """A maintenance step run alone in one write transaction: fn(txn) -> result."""

    fn: Callable[[Any], object]
    future: asyncio.Future[object]


_STOP = object()
# Bytes of pages a put's bytes can take at most: its value is stored twice (the object and its history
# entry), the key three times, with each entry's node header and B-tree pages filled as little as half.
GROWTH = 8


class Writer:
    def __init__(
        self,
        dbs: Databases,
        loop: asyncio.AbstractEventLoop,
        *,
        max_batch: int,
        quota: int | None,
        on_commit: Callable[[int, list[tuple[WriteOp, WriteResult]], list[Event]], None],
        on_durable: Callable[[], None] | None = None,
    ) -> None:
        self._dbs = dbs
        self._loop = loop
        self._max_batch = max_batch
        self._quota = quota
        self._on_commit = on_commit
        self._on_durable = on_durable
        # Held by this thread for each write transaction; taken by the loop to adopt a map another process grew.
        self.map_lock = threading.Lock()
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="capstan-lmdb-writer", daemon=True)
        self._stopping = False
        # The quota's bound on the size in use (see the module's docstring): the last measure, the bytes put
        # since by this process's batches, and the revision its last batch committed (0: measure again).
        self._measured = 0
        self._put_since = 0
        self._committed_revision = 0

    def start(self) -> None:
        self._thread.start()

    def submit(self, item: WriteOp | Job) -> None:
        if self._stopping:
            raise StoreClosed("the store is closed")
        self._queue.put(item)

    async def stop(self) -> None:
        """Commit everything already submitted, then end the thread."""
        if not self._stopping:
            self._stopping = True
            self._queue.put(_STOP)
        await asyncio.get_running_loop().run_in_executor(None, self._thread.join)

    # -- the writer thread ---------------------------------------------------

    def _run(self) -> None:
        pending: object | None = None
        while True:
            item = pending if pending is not None else self._queue.get()
            pending = None
            if item is _STOP:
                return
            if isinstance(item, Job):
                self._run_job(item)
                continue
            assert isinstance(item, WriteOp)
            batch = [item]
            while len(batch) < self._max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if not isinstance(nxt, WriteOp):
                    pending = nxt
                    break
                batch.append(nxt)
            self._commit_batch(batch)

    def _with_txn(self, fn: Callable[[Any], object]) -> object:
        """Run fn in a write transaction, growing the map and retrying when it fills."""
        while True:
            try:
                with self.map_lock, self._dbs.env.begin(write=True) as txn:
                    return fn(txn)
            except lmdb.MapFullError:
                self._grow()
            except lmdb.MapResizedError:
                self._grow(adopt=True)

    def _grow(self, *, adopt: bool = False) -> None:
        # set_mapsize needs no transaction open in the process; reads run only on the
        # loop thread and never across an await, so growing there, between callbacks, is safe.
        done = threading.Event()
        failure: list[BaseException] = []

        def on_loop() -> None:
            try:
                if adopt:
                    adopt_map_size(self._dbs)
                else:
                    grow(self._dbs)
            except BaseException as err:  # handed back to the writer thread
                failure.append(err)
            finally:
                done.set()

        self._loop.call_soon_threadsafe(on_loop)
        while not done.wait(1.0):
            if self._loop.is_closed():
                raise BackendFailure("the event loop closed while the map was growing")
        if failure:
            raise failure[0]
        log.info("LMDB map %s %d bytes", "now" if adopt else "grown to", self._dbs.env.info()["map_size"])

    def _commit_batch(self, batch: list[WriteOp]) -> None:
        results: list[tuple[WriteOp, WriteResult]] = []
        events: list[Event] = []
        refused: list[tuple[WriteOp, QuotaExceeded]] = []

        def apply(txn: Any) -> int:
            results.clear()
            events.clear()
            refused.clear()
            quota = self._quota
            revision = layout.unrev(txn.get(layout.META_REVISION, db=self._dbs.meta))
            used = self._in_use(txn, quota, revision, batch) if quota is not None else 0

            def admit(op: WriteOp) -> bool:
                nonlocal used
                cost = len(op.key) + len(op.value)
                if quota is not None and used + cost > quota:
                    refused.append((op, QuotaExceeded(used, cost, quota)))
                    return False
                used += cost
                return True

            for op in batch:
                outcome = _apply(txn, self._dbs, op, revision, admit)
                if outcome is None:
                    continue
                result, event = outcome
                if event is not None:
                    revision = event.revision
                    events.append(event)
                results.append((op, result))
            if events:
                txn.put(layout.META_REVISION, layout.rev(revision), db=self._dbs.meta)
            return revision

        try:
            revision = self._with_txn(apply)
        except BaseException as err:  # lmdb.Error and anything else: fail the batch, keep serving
            log.exception("write batch failed")
            failure = write_failure(err)
            self._loop.call_soon_threadsafe(_fail_all, [op.future for op in batch], failure)
            return
        assert isinstance(revision, int)
        # the bytes of the writes applied (deletes too: their history entries take pages)
        self._put_since += sum(len(event.kv.key) + len(event.kv.value) for event in events)
        self._committed_revision = revision
        if events and self._on_durable is not None:
            self._on_durable()
        for op, error in refused:
            self._loop.call_soon_threadsafe(_fail_all, [op.future], error)
        self._loop.call_soon_threadsafe(self._on_commit, revision, list(results), list(events))

    def _in_use(self, txn: Any, quota: int, revision: int, batch: list[WriteOp]) -> int:
        """The size in use for the quota as the batch starts: measured, or the bound that keeps it below half."""
        if revision == self._committed_revision:
            bound = self._measured + GROWTH * (self._put_since + sum(len(op.key) + len(op.value) for op in batch))
            if bound < quota // 2:
                return self._measured + self._put_since
        self._measured, self._put_since = size(txn, self._dbs), 0
        return self._measured

    def _run_job(self, job: Job) -> None:
        try:
            result = self._with_txn(job.fn)
        except BaseException as err:
            log.exception("maintenance job failed")
            self._loop.call_soon_threadsafe(_fail_all, [job.future], write_failure(err))
            return
        self._loop.call_soon_threadsafe(_resolve, job.future, result)


def _apply(
    txn: Any, dbs: Databases, op: WriteOp, revision: int, admit: Callable[[WriteOp], bool]
) -> tuple[WriteResult, Event | None] | None:
    """One write under its compare rule; the event when it succeeded (at revision + 1).

    None when a put that passed its compare is refused by admit (the quota): nothing written.
    """
    cur = reader.latest(txn, dbs, op.key)
    new_rev = revision + 1
    if op.kind == CREATE:
        if cur is not None:
            return WriteResult(Outcome.EXISTS, revision, cur), None
        if not admit(op):
            return None
        kv = KeyValue(op.key, op.value, new_rev, new_rev, 1)
        _put(txn, dbs, kv, 0)
        return WriteResult(Outcome.OK, new_rev, kv, None), Event(EventType.PUT, kv, None)
    if cur is None:
        return WriteResult(Outcome.NOT_FOUND, revision, None), None
    if op.expected is not None and op.expected != cur.mod_revision:
        return WriteResult(Outcome.CONFLICT, revision, cur), None
    if op.kind == UPDATE:
        if not admit(op):
            return None
        kv = KeyValue(op.key, op.value, cur.create_revision, new_rev, cur.version + 1)
        _put(txn, dbs, kv, cur.mod_revision)
        return WriteResult(Outcome.OK, new_rev, kv, cur), Event(EventType.PUT, kv, cur)
    gone = KeyValue(op.key, b"", cur.create_revision, new_rev, cur.version)
    txn.delete(op.key, db=dbs.kv)
    txn.put(
        layout.rev(new_rev),
        layout.record(layout.OP_DELETE, cur.create_revision, cur.version, cur.mod_revision, op.key, b""),
        db=dbs.log,
        append=True,
    )
    txn.put(op.key, layout.idx_entry(new_rev, layout.OP_DELETE), db=dbs.idx)
    return WriteResult(Outcome.OK, new_rev, None, cur), Event(EventType.DELETE, gone, cur)


def _put(txn: Any, dbs: Databases, kv: KeyValue, prev_revision: int) -> None:
    txn.put(kv.key, layout.HEADER.pack(kv.create_revision, kv.mod_revision, kv.version) + kv.value, db=dbs.kv)
    txn.put(
        layout.rev(kv.mod_revision),
        layout.record(layout.OP_PUT, kv.create_revision, kv.version, prev_revision, kv.key, kv.value),
        db=dbs.log,
        append=True,
    )
    txn.put(kv.key, layout.idx_entry(kv.mod_revision, layout.OP_PUT), db=dbs.idx)


def _fail_all(futures: Sequence[asyncio.Future[Any]], error: BaseException) -> None:
    for fut in futures:
        if not fut.done():
            fut.set_exception(error)


def _resolve(future: asyncio.Future[object], result: object) -> None:
    if not future.done():
        future.set_result(result)
