"""Compaction of a shared etcd, as kube-apiserver compacts it (apiserver/pkg/storage/etcd3/compact.go).

etcd's history is the whole cluster's, so it is compacted once per interval by whichever core gets
there first, not once per core. Every core's store runs one of these; each round (every `interval`
seconds) it compare-and-swaps the compaction key on its *version*, the round counter the cores
share:

- the compare holds (the key's version is the one this core last saw): the core has won the round.
  It writes, bumping the version, and compacts to the revision it saw one round earlier, so at
  least one interval of history always stays. The first round a core wins after it starts only
  records the revision (kube does not compact on bootstrap).
- it fails (another core won since): the core adopts the key's version and the current revision,
  and tries again next round, so when the winning core dies another one wins within two intervals.

Where `retention_revisions` is set (0 by default, as kube), a compaction never comes closer than that
to the current revision (the policy storage/compactor.py keeps for the embedded stores), so a burst of
writes keeps its history for watchers that fall behind.

The key is kube's `compact_rev_key` at the cluster's root, outside any --etcd-prefix, because what
it guards (etcd's compaction) is cluster-wide too: Capstans with different prefixes, and a
kube-apiserver sharing the cluster, take turns through it rather than each compacting on its own.
Its value is the revision the winner compacts to, as kube writes it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from storage.errors import StorageError
from storage.etcd.pb.etcdserverpb import rpc_pb2
from storage.tasks import cancel

log = logging.getLogger(__name__)

Txn = Callable[[rpc_pb2.TxnRequest], Awaitable[rpc_pb2.TxnResponse]]
Compact = Callable[[int], Awaitable[int]]


class EtcdCompactor:
    def __init__(self, key: bytes, interval: float, retention_revisions: int, txn: Txn, compact: Compact) -> None:
        self.key = key
        self._interval = interval
        self._retention_revisions = retention_revisions
        self._txn = txn  # one transaction on the cluster, etcd's errors as the store's
        self._compact = compact  # the store's compact(), which also forgets its watch window below it
        self._time = 0  # the compaction key's version as this core last saw it: the shared round counter
        self._revision = 0  # the cluster's revision when this core last took part in a round
        self._task: asyncio.Task[None] | None = None
        self.compactions = 0  # rounds this core won and compacted in (for tests and logs)

    def start(self) -> None:
        if self._interval > 0 and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="capstan-etcd-compactor")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel(task)

    async def round(self) -> int:
        """One round: the revision compacted to, or 0 when another core won it or there was nothing to do."""
        response = await self._txn(rpc_pb2.TxnRequest(
            compare=[rpc_pb2.Compare(
                result=rpc_pb2.Compare.EQUAL, target=rpc_pb2.Compare.VERSION, key=self.key, version=self._time)],
            success=[rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=self.key, value=b"%d" % self._revision))],
            failure=[rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=self.key))],
        ))
        current = response.header.revision
        if not response.succeeded:
            kvs = response.responses[0].response_range.kvs
            self._time = kvs[0].version if kvs else 0  # deleted by hand: the count starts over
            self._revision = current
            return 0
        self._time += 1
        target, self._revision = self._revision, current
        target = min(target, current - self._retention_revisions)
        if target <= 0:
            return 0
        await self._compact(target)
        self.compactions += 1
        log.info("compacted etcd to revision %d", target)
        return target

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.round()
            except StorageError as err:  # etcd unreachable, the store closing: the next round tries again
                log.warning("etcd compaction round failed: %s", err)
