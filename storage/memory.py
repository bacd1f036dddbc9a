"""The in-memory reference backend: the Store contract in the plainest code.

It exists so the contract suite has a second implementation to hold the LMDB
backend to, and so property tests have a model whose correctness is obvious.
Nothing is durable; everything is lost on close.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

from storage import validate
from storage.broadcast import Broadcaster
from storage.clock import RevisionClock
from storage.compactor import AutoCompactor
from storage.errors import Compacted, InvalidArgument, QuotaExceeded, StoreClosed
from storage.options import StoreOptions
from storage.types import (
    CountResult,
    Event,
    EventType,
    GetResult,
    KeyValue,
    ListResult,
    Outcome,
    WriteResult,
)
from storage.watch import HistoryPage, ReplayingWatch

# One key's incarnations over time: (revision, the key as of then, or None once deleted).
Versions = list[tuple[int, KeyValue | None]]


class MemoryStore:
    def __init__(self, options: StoreOptions) -> None:
        self._options = options
        self._revision = 1
        self._compacted = 0
        self._versions: dict[bytes, Versions] = {}
        self._log: list[Event] = []  # in revision order; compaction drops the head
        self._size = 0  # len(key) + len(value) of every retained version, tombstones by their key
        self._clock = RevisionClock(self._revision)
        self._broadcaster = Broadcaster(options.watch_queue_size)
        self._compactor = AutoCompactor(self, options)
        self._closed = False

    @classmethod
    async def open(cls, options: StoreOptions | None = None) -> MemoryStore:
        store = cls(options or StoreOptions())
        store._compactor.start()
        return store

    # -- reads -------------------------------------------------------------

    def recent(self, key: bytes) -> KeyValue | None:
        return None  # a get is local and as cheap: nothing to remember

    async def get(self, key: bytes, *, at_revision: int | None = None) -> GetResult:
        validate.check_key(key)
        rev = await self._read_revision(validate.check_read_revision(at_revision))
        return GetResult(rev, self._at(key, rev))

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
        rev = await self._read_revision(validate.check_read_revision(at_revision))
        kvs = [
            kv
            for key in sorted(self._versions)
            if key.startswith(prefix) and (after is None or key > after)
            if (kv := self._at(key, rev)) is not None
        ]
        if not values:
            kvs = [kv._replace(value=b"") for kv in kvs]
        if lim is None:
            return ListResult(rev, kvs, 0)
        return ListResult(rev, kvs[:lim], max(0, len(kvs) - lim))

    async def count(self, prefix: bytes, *, at_revision: int | None = None) -> CountResult:
        page = await self.list(prefix, at_revision=at_revision)
        return CountResult(page.revision, len(page.kvs))

    def _at(self, key: bytes, revision: int) -> KeyValue | None:
        versions = self._versions.get(key)
        if not versions:
            return None
        i = bisect.bisect_right(versions, revision, key=lambda v: v[0])
        return versions[i - 1][1] if i else None

    async def _read_revision(self, wanted: int | None) -> int:
        self._check_open()
        if wanted is None:
            return self._revision
        if wanted < self._compacted:
            raise Compacted(wanted, self._compacted)
        await self._clock.wait_for(wanted, self._options.future_wait)
        return wanted

    # -- writes ------------------------------------------------------------

    async def create(self, key: bytes, value: bytes) -> WriteResult:
        validate.check_key(key)
        validate.check_value(value)
        self._check_open()
        cur = self._at(key, self._revision)
        if cur is not None:
            return WriteResult(Outcome.EXISTS, self._revision, cur)
        self._admit(key, value)
        rev = self._revision + 1
        kv = KeyValue(key, value, rev, rev, 1)
        self._commit(Event(EventType.PUT, kv, None))
        return WriteResult(Outcome.OK, rev, kv, None)

    async def update(
        self, key: bytes, value: bytes, *, expected_mod_revision: int | None = None
    ) -> WriteResult:
        validate.check_key(key)
        validate.check_value(value)
        expected = validate.check_expected(expected_mod_revision)
        return self._write(key, expected, lambda cur, rev: KeyValue(
            key, value, cur.create_revision, rev, cur.version + 1
        ), value)

    async def delete(self, key: bytes, *, expected_mod_revision: int | None = None) -> WriteResult:
        validate.check_key(key)
        expected = validate.check_expected(expected_mod_revision)
        return self._write(key, expected, None)

    def _write(
        self,
        key: bytes,
        expected: int | None,
        make: Callable[[KeyValue, int], KeyValue] | None,
        value: bytes = b"",
    ) -> WriteResult:
        """Update (make given, writing `value`) or delete (make None) under the compare rules."""
        self._check_open()
        cur = self._at(key, self._revision)
        if cur is None:
            return WriteResult(Outcome.NOT_FOUND, self._revision, None)
        if expected is not None and cur.mod_revision != expected:
            return WriteResult(Outcome.CONFLICT, self._revision, cur)
        rev = self._revision + 1
        if make is None:
            gone = KeyValue(key, b"", cur.create_revision, rev, cur.version)
            self._commit(Event(EventType.DELETE, gone, cur))
            return WriteResult(Outcome.OK, rev, None, cur)
        self._admit(key, value)
        kv = make(cur, rev)
        self._commit(Event(EventType.PUT, kv, cur))
        return WriteResult(Outcome.OK, rev, kv, cur)

    def _admit(self, key: bytes, value: bytes) -> None:
        """Raise QuotaExceeded when a put of key and value would take the size past the quota."""
        quota = self._options.quota_bytes
        cost = len(key) + len(value)
        if quota is not None and self._size + cost > quota:
            raise QuotaExceeded(self._size, cost, quota)

    def _commit(self, event: Event) -> None:
        self._size += len(event.kv.key) + len(event.kv.value)
        self._revision = event.revision
        now = event.kv if event.type is EventType.PUT else None
        self._versions.setdefault(event.kv.key, []).append((event.revision, now))
        self._log.append(event)
        self._clock.advance(self._revision)
        self._broadcaster.publish((event,))

    # -- watch -------------------------------------------------------------

    def watch(self, prefix: bytes, *, from_revision: int) -> ReplayingWatch:
        validate.check_prefix(prefix)
        validate.check_watch_revision(from_revision)
        self._check_open()
        return ReplayingWatch(
            source=self,
            clock=self._clock,
            subscriber=self._broadcaster.subscribe(prefix),
            from_revision=from_revision,
            future_wait=self._options.future_wait,
        )

    def read_history(self, prefix: bytes, after: int, limit: int) -> HistoryPage:
        self._check_open()
        if after < self._compacted:
            raise Compacted(after, self._compacted)
        start = bisect.bisect_right(self._log, after, key=lambda e: e.revision)
        events: list[Event] = []
        for event in self._log[start:]:
            if event.kv.key.startswith(prefix):
                events.append(event)
                if len(events) == limit:
                    return HistoryPage(events, event.revision, event.revision == self._revision)
        return HistoryPage(events, self._revision, True)

    # -- compaction and lifecycle --------------------------------------------

    async def compact(self, revision: int) -> int:
        self._check_open()
        validate.check_read_revision(revision)
        if revision > self._revision:
            raise InvalidArgument(f"cannot compact to {revision}, beyond the current revision {self._revision}")
        if revision <= self._compacted:
            return self._revision
        self._compacted = revision
        self._log = self._log[bisect.bisect_right(self._log, revision, key=lambda e: e.revision):]
        for key in list(self._versions):
            versions = self._versions[key]
            i = bisect.bisect_right(versions, revision, key=lambda v: v[0])
            kept = versions[i - 1:] if i else versions
            if kept and kept[0][0] <= revision and kept[0][1] is None:
                kept = kept[1:]
            if kept:
                self._versions[key] = kept
            else:
                del self._versions[key]
        self._size = sum(
            len(key) + (len(kv.value) if kv is not None else 0)
            for key, versions in self._versions.items()
            for _, kv in versions
        )
        return self._revision

    def current_revision(self) -> int:
        return self._revision

    def compacted_revision(self) -> int:
        return self._compacted

    def size_bytes(self) -> int:
        return self._size

    def quota_bytes(self) -> int | None:
        return self._options.quota_bytes

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._compactor.stop()
        self._clock.close()
        self._broadcaster.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")
