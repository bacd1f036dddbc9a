"""The garbage collector's loop: keep the graph from the store, hand its work to workers.

The graph follows one watch of every key in the store (a reflector over the store, server/runtime/reflector.py),
started at the revision of one list of every key, so it moves through the store's revisions in order, all kinds
together: an owner's deletion is never seen before the creation of a dependent that preceded it, whatever their
kinds (with one watch per resource, as informers have, an orphaned owner could be finalized before a dependent
created just before it was seen). A watch that is dropped (too slow, compacted) is replaced by a new list, which the
graph takes as a whole (what is missing from it was deleted meanwhile), then a new watch. Workers
(server/runtime/worker.py, over the rate-limited work queue) start once the first list is in.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from server.controllers.gc.graph import Graph, Identity, Node, Work, node_of
from server.controllers.gc.work import Retry, Unresolvable, Worker
from server.machinery import errors, stored
from server.objects import render
from server.objects.core import Core
from server.registry.resources import Resource
from server.runtime.reflector import Reflector, StoreListWatch
from server.runtime.worker import Worker as QueueWorker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue
from storage import Event, EventType, KeyValue

log = logging.getLogger(__name__)

EVERYTHING = b"/"
WORKERS = 8  # items worked on at once (kube-controller-manager runs 20 for deletes, 1 for orphaning)
BASE_DELAY, MAX_DELAY = 0.005, 30.0  # a failed item's retry: 5 ms doubled per failure, at most 30 s
# Answers a retry would only repeat (a refused delete, a resource no longer served): the item is dropped
# after a warning. Anything else (conflicts, timeouts, unavailability) is retried with backoff.
PERMANENT = frozenset({400, 403, 404, 405, 422})
# Most objects name no owner and are not being deleted: their node is their uid and name alone, read
# from the start of their stored JSON when it is metadata's plain (unescaped) name, generateName,
# namespace and uid, in the order server/machinery/stored.py keeps (anything else is parsed). The two keys'
# bytes can appear unescaped only as keys, so their absence means no owners and no deletion.
_PLAIN_START = re.compile(
    re.escape(stored.JSON_PREFIX)
    + rb'"name":"([^"\\]*)"(?:,"generateName":"[^"\\]*")?(?:,"namespace":"([^"\\]*)")?,"uid":"([^"\\]*)"')


class GarbageCollector:
    def __init__(self, core: Core, *, workers: int = WORKERS) -> None:
        self._core = core
        self._store = core.context.store
        self._graph = Graph()
        self._workers = workers
        self._queue: WorkQueue[Work] = WorkQueue(ExponentialBackoff(BASE_DELAY, MAX_DELAY))
        self._worker = Worker(self._core, self._graph, self._queue.add)
        self._runner = QueueWorker(self._queue, self._do, name="capstan-gc-worker", count=workers, retry=self._failed)
        self._reflector = Reflector(StoreListWatch(self._store, EVERYTHING, self._listed), self,
                                    name="capstan-garbage-collector")
        self._revision = 0  # the newest revision the graph reflects
        self._resources: dict[bytes, Resource] = {}  # by key prefix

    def start(self) -> None:
        """Start from an empty graph and a new list of the store (so a stopped collector can start again)."""
        self._graph = Graph()
        self._queue = WorkQueue(ExponentialBackoff(BASE_DELAY, MAX_DELAY))
        self._worker = Worker(self._core, self._graph, self._queue.add)
        self._runner = QueueWorker(self._queue, self._do, name="capstan-gc-worker", count=self._workers,
                                   retry=self._failed)
        self._revision = 0
        self._reflector.launch()

    async def stop(self) -> None:
        await self._reflector.stop()
        await self._runner.stop()

    def running(self) -> bool:
        """Started and not stopped or dead (its /healthz poststarthook check)."""
        return self._reflector.running()

    def synced(self) -> bool:
        """The first list of the store is in the graph (its /readyz informer-sync check)."""
        return self._reflector.synced()

    def idle(self) -> bool:
        """Caught up with the store, and nothing queued, in hand or waiting to be retried."""
        return self._revision >= self._store.current_revision() and self._queue.idle()

    # The reflector's target.

    def replace(self, listed: Sequence[tuple[bytes, Node]], revision: int) -> None:
        """A (re)list of the store; workers start once the first is in."""
        self._enqueue(self._graph.replace(listed))
        self._revision = revision
        if not self._runner.running():
            self._runner.start()

    def apply(self, events: Sequence[Event], revision: int) -> None:
        for event in events:
            self._apply(event)
        self._revision = revision

    def _listed(self, kv: KeyValue) -> tuple[bytes, Node] | None:
        node = self._node(kv)
        return None if node is None else (kv.key, node)

    def _apply(self, event: Event) -> None:
        if event.type is EventType.DELETE:
            self._enqueue(self._graph.remove(event.kv.key))
            return
        node = self._node(event.kv)
        if node is not None:
            self._enqueue(self._graph.put(event.kv.key, node))

    def _node(self, kv: KeyValue) -> Node | None:
        """The graph's node for a stored object; None for a key no served resource owns.

        Keys are /<group or "core">/<resource>/[<namespace>/]<name> (server/registry/resources.py).
        """
        prefix = kv.key[:kv.key.find(b"/", kv.key.find(b"/", 1) + 1) + 1]
        resource = self._resources.get(prefix) or self._resource(prefix)
        if resource is None:
            return None
        json = stored.json_of(kv.value)
        plain = _PLAIN_START.match(json)
        if plain is not None and b'"ownerReferences":' not in json and b'"deletionTimestamp":' not in json:
            name, namespace, uid = (group.decode() if group else "" for group in plain.groups())
            return Node(Identity(uid, resource.group, resource.version, resource.resource, resource.kind, namespace,
                                 name), (), False, False, False)
        obj = render.load(kv.value)
        m = obj.get("metadata") or {}
        identity = Identity(str(m.get("uid", "")), resource.group, resource.version, resource.resource,
                            resource.kind, str(m.get("namespace", "")), str(m.get("name", "")))
        return node_of(identity, obj)

    def _resource(self, prefix: bytes) -> Resource | None:
        """The resource whose keys start with `prefix` (/<group or "core">/<resource>/), remembered once found."""
        parts = prefix.split(b"/")
        if len(parts) != 4:
            return None
        group = "" if parts[1] == b"core" else parts[1].decode()
        resources = self._core.registry.by_group_resource(group, parts[2].decode())
        if not resources:
            return None
        self._resources[prefix] = resources[0]
        return resources[0]

    def _enqueue(self, work: list[Work]) -> None:
        for item in work:
            self._queue.add(item)

    async def _do(self, item: Work) -> None:
        await self._worker.do(item)

    def _failed(self, item: Work, err: Exception) -> bool:
        """Whether a failed item is retried (with backoff): not when a retry would only repeat the answer."""
        if isinstance(err, Unresolvable):
            log.warning("garbage collector: %s", err)
            return False
        if isinstance(err, Retry):
            log.info("garbage collector: %s; retrying", err)
            return True
        if isinstance(err, errors.ApiError):
            log.warning("garbage collector: %s: %s", item, err)
            return err.code not in PERMANENT
        log.error("garbage collector: %s failed; retrying", item, exc_info=err)
        return True
