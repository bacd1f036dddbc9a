"""The etcd backend: the Store contract over an etcd v3 cluster, for cores that scale out.

Revisions are etcd's own: the store revision is etcd's cluster-wide revision, so a
resourceVersion handed out by one core is understood by every other. Writes are single
transactions that compare and write in one step (create: create_revision == 0; update and
delete: mod_revision == expected, or create_revision > 0 when nothing is expected) and read the
key back on the failure branch, so a failed compare is the same Outcome data as on LMDB without
a second round trip. Reads at a past revision are etcd ranges at that revision; a future one
waits up to `future_wait` for the revision to be acknowledged, then raises RevisionTooLarge.
Watches come from one etcd watch on the whole prefix (storage/etcd/feed.py).

Unlike LMDB, the store is shared: other processes write to it, so current_revision() is the
newest revision this process has seen in any etcd answer (writes, reads, the watch and its
progress responses), and the first write to a fresh cluster is not revision 2.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
import grpc.aio

from storage import validate
from storage.broadcast import Broadcaster
from storage.clock import RevisionClock
from storage.errors import (
    Compacted,
    InvalidArgument,
    QuotaExceeded,
    RevisionTooLarge,
    StorageError,
    StoreClosed,
)
from storage.etcd.client import COMPACTED, FUTURE, NO_SPACE, Stubs, failure, open_channel
from storage.etcd.compactor import EtcdCompactor
from storage.etcd.config import EtcdConfig
from storage.etcd.feed import Feed, progress_in_order, to_kv
from storage.etcd.keys import range_end
from storage.etcd.pb.etcdserverpb import rpc_pb2
from storage.options import StoreOptions
from storage.types import CountResult, GetResult, KeyValue, ListResult, Outcome, WriteResult
from storage.watch import ReplayingWatch

Req = TypeVar("Req")
Resp = TypeVar("Resp")

EQUAL = rpc_pb2.Compare.EQUAL
GREATER = rpc_pb2.Compare.GREATER


class _FutureRevision(Exception):
    """etcd has not reached the revision asked for (yet)."""


class EtcdStore:
    def __init__(self, config: EtcdConfig, options: StoreOptions, channel: grpc.aio.Channel, revision: int) -> None:
        self._config = config
        self._options = options
        self._root = config.root
        self._channel = channel
        self._stubs = Stubs(channel)
        self._acked = RevisionClock(revision)  # the newest revision seen in any etcd answer
        self._compacted = 0
        self._compacted_at_open = 0
        self._size = 0
        self._broadcaster = Broadcaster(options.watch_queue_size)
        self._feed = Feed(
            self._stubs.watch, config, start=revision, broadcaster=self._broadcaster, observe=self._acked.advance
        )
        self._closed = False
        self._inflight = 0
        self._drained = asyncio.Event()
        self._drained.set()
        # kube's --etcd-compaction-interval is the retention: a round compacts to the revision of the round
        # before, so at least retention_seconds of history stay. compact_interval 0 turns it off, as for LMDB.
        interval = options.retention_seconds if options.compact_interval > 0 else 0.0
        self.compactor = EtcdCompactor(
            config.compact_key, interval, options.retention_revisions, self._compaction_txn, self.compact
        )

    @classmethod
    async def open(cls, config: EtcdConfig, options: StoreOptions | None = None) -> EtcdStore:
        """Connect and read the cluster's revision; BackendFailure if no member answers in time."""
        channel = open_channel(config)
        try:
            stubs = Stubs(channel)
            probe = rpc_pb2.RangeRequest(key=config.root, count_only=True)
            try:
                header = (await stubs.kv.Range(probe, timeout=config.call_timeout)).header
            except grpc.aio.AioRpcError as err:
                raise failure(err) from None
            store = cls(config, options or StoreOptions(), channel, header.revision)
            store._compacted = store._compacted_at_open = await store._probe_compacted()
            await store._refresh_size()
        except BaseException:
            await channel.close()
            raise
        store._feed.start()
        store.compactor.start()
        return store

    # -- calls -------------------------------------------------------------------

    async def _call(self, method: Callable[..., Awaitable[Resp]], request: object, *, cost: int = 0) -> Resp:
        """One unary call within the timeout; etcd's errors as the store's. Counted for close()."""
        self._check_open()
        self._inflight += 1
        self._drained.clear()
        try:
            response = await method(request, timeout=self._config.call_timeout)
        except grpc.aio.AioRpcError as err:
            raise self._translate(err, cost) from None
        finally:
            self._inflight -= 1
            if not self._inflight:
                self._drained.set()
        header = getattr(response, "header", None)
        if header is not None:
            self._acked.advance(header.revision)
        return response

    def _translate(self, err: grpc.aio.AioRpcError, cost: int) -> Exception:
        detail = err.details() or ""
        if self._closed and err.code() is grpc.StatusCode.CANCELLED:
            return StoreClosed("the store is closed")
        if COMPACTED in detail:
            return _CompactedSomewhere()
        if FUTURE in detail:
            return _FutureRevision()
        if NO_SPACE in detail:
            return QuotaExceeded(self._size, cost, self._options.quota_bytes or self._size)
        return failure(err)

    async def _read(self, request: rpc_pb2.RangeRequest, at: int | None) -> rpc_pb2.RangeResponse:
        """A range at `at` (None: the newest); Compacted or RevisionTooLarge when etcd cannot serve it."""
        self._check_open()
        if at is None:
            return await self._call(self._stubs.kv.Range, request)
        if at < self._compacted:
            raise Compacted(at, self._compacted)
        request.revision = at
        try:
            return await self._call(self._stubs.kv.Range, request)
        except _CompactedSomewhere:
            raise Compacted(at, await self._learn_compacted()) from None
        except _FutureRevision:
            pass
        # Not there yet: wait for the revision to be acknowledged here (a write through this store,
        # or the watch or its progress seeing one from elsewhere), then ask once more.
        with contextlib.suppress(RevisionTooLarge):
            await self._acked.wait_for(at, self._options.future_wait)
        try:
            return await self._call(self._stubs.kv.Range, request)
        except _FutureRevision:
            raise RevisionTooLarge(at, self._acked.revision) from None
        except _CompactedSomewhere:
            raise Compacted(at, await self._learn_compacted()) from None

    # -- reads -------------------------------------------------------------------

    def recent(self, key: bytes) -> KeyValue | None:
        """From the feed's window (and this store's own acknowledged writes): what kube-apiserver's watch
        cache hands GuaranteedUpdate as the object it probably is, saving a Range before a compare-and-swap."""
        return self._feed.latest.get(key)

    async def get(self, key: bytes, *, at_revision: int | None = None) -> GetResult:
        validate.check_key(key)
        at = validate.check_read_revision(at_revision)
        response = await self._read(rpc_pb2.RangeRequest(key=self._root + key), at)
        kv = to_kv(self._root, response.kvs[0]) if response.kvs else None
        return GetResult(at or response.header.revision, kv)

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
        # etcd counts the range in the same read whatever is asked: `counted` changes nothing here.
        validate.check_prefix(prefix)
        after = validate.check_start_after(start_after)
        lim = validate.check_limit(limit)
        at = validate.check_read_revision(at_revision)
        start = self._root + prefix
        if after is not None:
            start = max(start, self._root + after + b"\x00")  # the first key strictly after
        request = rpc_pb2.RangeRequest(key=start, range_end=range_end(self._root + prefix), limit=lim or 0,
                                       keys_only=not values)
        response = await self._read(request, at)
        kvs = [to_kv(self._root, kv) for kv in response.kvs]
        # count is every key in [start, end) at that revision, the page included.
        return ListResult(at or response.header.revision, kvs, max(0, response.count - len(kvs)))

    async def count(self, prefix: bytes, *, at_revision: int | None = None) -> CountResult:
        validate.check_prefix(prefix)
        at = validate.check_read_revision(at_revision)
        key = self._root + prefix
        response = await self._read(rpc_pb2.RangeRequest(key=key, range_end=range_end(key), count_only=True), at)
        return CountResult(at or response.header.revision, response.count)

    # -- writes ------------------------------------------------------------------

    async def create(self, key: bytes, value: bytes) -> WriteResult:
        validate.check_key(key)
        validate.check_value(value)
        k = self._root + key
        response = await self._txn(
            rpc_pb2.Compare(result=EQUAL, target=rpc_pb2.Compare.CREATE, key=k, create_revision=0),
            rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=k, value=value)),
            k,
            cost=len(key) + len(value),
        )
        rev = response.header.revision
        if response.succeeded:
            created = KeyValue(key, value, rev, rev, 1)
            self._feed.remember(created, key, rev)
            return WriteResult(Outcome.OK, rev, created, None)
        return WriteResult(Outcome.EXISTS, rev, self._current(response))

    async def update(
        self, key: bytes, value: bytes, *, expected_mod_revision: int | None = None
    ) -> WriteResult:
        validate.check_key(key)
        validate.check_value(value)
        expected = validate.check_expected(expected_mod_revision)
        k = self._root + key
        put = rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=k, value=value, prev_kv=True))
        response = await self._txn(self._exists(k, expected), put, k, cost=len(key) + len(value))
        rev = response.header.revision
        if not response.succeeded:
            return self._failed(response)
        prev = to_kv(self._root, response.responses[0].response_put.prev_kv)
        updated = KeyValue(key, value, prev.create_revision, rev, prev.version + 1)
        self._feed.remember(updated, key, rev)
        return WriteResult(Outcome.OK, rev, updated, prev)

    async def delete(self, key: bytes, *, expected_mod_revision: int | None = None) -> WriteResult:
        validate.check_key(key)
        expected = validate.check_expected(expected_mod_revision)
        k = self._root + key
        op = rpc_pb2.RequestOp(request_delete_range=rpc_pb2.DeleteRangeRequest(key=k, prev_kv=True))
        response = await self._txn(self._exists(k, expected), op, k)
        if not response.succeeded:
            return self._failed(response)
        prev = to_kv(self._root, response.responses[0].response_delete_range.prev_kvs[0])
        self._feed.remember(None, key, response.header.revision)
        return WriteResult(Outcome.OK, response.header.revision, None, prev)

    @staticmethod
    def _exists(key: bytes, expected: int | None) -> rpc_pb2.Compare:
        """The key exists (create_revision > 0) and, when expected is given, was last written then."""
        if expected is None:
            return rpc_pb2.Compare(result=GREATER, target=rpc_pb2.Compare.CREATE, key=key, create_revision=0)
        return rpc_pb2.Compare(result=EQUAL, target=rpc_pb2.Compare.MOD, key=key, mod_revision=expected)

    async def _txn(
        self, compare: rpc_pb2.Compare, then: rpc_pb2.RequestOp, key: bytes, *, cost: int = 0
    ) -> rpc_pb2.TxnResponse:
        """compare ? then : read the key back, in one transaction."""
        txn = rpc_pb2.TxnRequest(
            compare=[compare], success=[then], failure=[rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=key))]
        )
        try:
            return await self._call(self._stubs.kv.Txn, txn, cost=cost)
        except (_CompactedSomewhere, _FutureRevision) as err:  # not asked for: a bug, not the caller's
            raise InvalidArgument(f"etcd refused a transaction on {key!r}: {type(err).__name__}") from None

    def _current(self, response: rpc_pb2.TxnResponse) -> KeyValue | None:
        kvs = response.responses[0].response_range.kvs
        return to_kv(self._root, kvs[0]) if kvs else None

    def _failed(self, response: rpc_pb2.TxnResponse) -> WriteResult:
        current = self._current(response)
        outcome = Outcome.NOT_FOUND if current is None else Outcome.CONFLICT
        return WriteResult(outcome, response.header.revision, current)

    # -- watch -------------------------------------------------------------------

    def watch(self, prefix: bytes, *, from_revision: int) -> ReplayingWatch:
        validate.check_prefix(prefix)
        validate.check_watch_revision(from_revision)
        self._check_open()
        if from_revision == 0 and self._compacted <= self._compacted_at_open:
            # "All retained history" is the feed's window: everything since this store opened.
            from_revision = self._feed.floor
        return ReplayingWatch(
            source=self._feed,
            clock=self._feed.clock,
            subscriber=self._feed.subscribe(prefix),
            from_revision=from_revision,
            future_wait=self._options.future_wait,
        )

    # -- compaction and lifecycle -------------------------------------------------

    async def compact(self, revision: int) -> int:
        self._check_open()
        validate.check_read_revision(revision)
        current = self._acked.revision
        if revision > current:
            raise InvalidArgument(f"cannot compact to {revision}, beyond the current revision {current}")
        if revision <= self._compacted:
            return current
        try:
            await self._call(self._stubs.kv.Compact, rpc_pb2.CompactionRequest(revision=revision))
        except _CompactedSomewhere:  # another process compacted further already
            await self._learn_compacted()
        self._compacted = max(self._compacted, revision)
        # The window forgets only what the feed has delivered: let it catch up with the revision first, so
        # a watch from below it is Compacted as a read is (a feed cut off from etcd forgets what it has).
        with contextlib.suppress(RevisionTooLarge):
            await self._feed.clock.wait_for(self._compacted, self._options.future_wait)
        self._feed.forget_before(self._compacted)
        await self._refresh_size()
        return self._acked.revision

    async def _compaction_txn(self, txn: rpc_pb2.TxnRequest) -> rpc_pb2.TxnResponse:
        return await self._call(self._stubs.kv.Txn, txn)

    async def _learn_compacted(self) -> int:
        self._compacted = max(self._compacted, await self._probe_compacted())
        self._feed.forget_before(self._compacted)
        return self._compacted

    async def _probe_compacted(self) -> int:
        """etcd's compacted revision (0: none): the oldest revision a read is answered at, found by bisection.

        etcd reports it nowhere directly. A watch from revision 1 is refused with it, but etcd before 3.5.9
        may answer a progress request before that refusal, so a watch cannot tell "not compacted" from "not
        refused yet". A read at a revision is refused exactly below it, so ~log2(revision) count-only reads of
        one key that is never written find it.
        """

        async def readable(revision: int) -> bool:
            try:
                await self._call(self._stubs.kv.Range, rpc_pb2.RangeRequest(key=probe, revision=revision,
                                                                             count_only=True))
            except _CompactedSomewhere:
                return False
            return True

        probe = self._root + b"\x00compaction-probe"
        if await readable(1):
            return 0
        low, high = 1, (await self._call(self._stubs.kv.Range, rpc_pb2.RangeRequest(key=probe, count_only=True))
                        ).header.revision  # low is refused, high (the newest) never is
        while high - low > 1:
            middle = (low + high) // 2
            if await readable(middle):
                high = middle
            else:
                low = middle
        return int(high)

    async def _refresh_size(self) -> None:
        status = await self._call(self._stubs.maintenance.Status, rpc_pb2.StatusRequest())
        self._size = status.dbSizeInUse or status.dbSize
        self._feed.ordered_progress = progress_in_order(status.version)

    @property
    def config(self) -> EtcdConfig:
        return self._config

    def current_revision(self) -> int:
        return self._acked.revision

    def compacted_revision(self) -> int:
        return self._compacted

    def size_bytes(self) -> int:
        return self._size

    def quota_bytes(self) -> int | None:
        return self._options.quota_bytes

    @property
    def watching(self) -> bool:
        """Whether the etcd watch is established (a readiness signal)."""
        return self._feed.connected

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self.compactor.stop()
        # Calls already sent finish (or time out) first, so none is acknowledged by etcd and lost here.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._config.call_timeout):
                await self._drained.wait()
        await self._feed.stop()
        self._acked.close()
        self._broadcaster.close()
        await self._channel.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")


class _CompactedSomewhere(StorageError):
    """etcd refused a revision as compacted; the caller learns which revision is the oldest."""
