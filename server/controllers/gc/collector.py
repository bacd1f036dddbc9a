"""The garbage collector's loop: keep the graph from the store, hand its work to workers.

The graph follows one watch of every key in the store, started at the revision of
one list of every key, so it moves through the store's revisions in order, all
kinds together: an owner's deletion is never seen before the creation of a
dependent that preceded it, whatever their kinds (with one watch per resource, as
informers have, an orphaned owner could be finalized before a dependent created
just before it was seen). A watch that is dropped (too slow, compacted) is
replaced by a new list, which the graph takes as a whole (what is missing from it
was deleted meanwhile), then a new watch. Workers start once the first list is in.
"""

from __future__ import annotations

import asyncio
import logging
import re

from server import errors, stored
from server.controllers.gc.graph import Graph, Identity, Node, Work, node_of
from server.controllers.gc.queue import WorkQueue
from server.controllers.gc.work import Retry, Unresolvable, Worker
from server.core import Core
from server.objects import render
from server.registry import Resource
from server.runtime.tasks import cancel_all
from storage import Compacted, Event, EventType, KeyValue, StorageError, StoreClosed, WatcherTooSlow

log = logging.getLogger(__name__)

EVERYTHING = b"/"
LIST_PAGE = 1000  # keys per read while listing the store
WORKERS = 8  # items worked on at once (kube-controller-manager runs 20 for deletes, 1 for orphaning)
RELIST_DELAY = 0.1  # seconds before listing again after a failed list or watch
# Answers a retry would only repeat (a refused delete, a resource no longer served): the item is dropped
# after a warning. Anything else (conflicts, timeouts, unavailability) is retried with backoff.
PERMANENT = frozenset({400, 403, 404, 405, 422})
# Most objects name no owner and are not being deleted: their node is their uid and name alone, read
# from the start of their stored JSON when it is metadata's plain (unescaped) name, generateName,
# namespace and uid, in the order server/stored.py keeps (anything else is parsed). The two keys'
# bytes can appear unescaped only as keys, so their absence means no owners and no deletion.
_PLAIN_START = re.compile(
    re.escape(stored.JSON_PREFIX)
    + rb'"name":"([^"\\]*)"(?:,"generateName":"[^"\\]*")?(?:,"namespace":"([^"\\]*)")?,"uid":"([^"\\]*)"')


class GarbageCollector:
    def __init__(self, core: Core, *, workers: int = WORKERS) -> None:
        self._core = core
        self._store = core.context.store
        self._graph = Graph()
        self._queue: WorkQueue[Work] = WorkQueue()
        self._worker = Worker(core, self._graph, self._queue.add)
        self._workers = workers
        self._tasks: list[asyncio.Task[None]] = []  # the follower, then the workers once the first list is in
        self._revision = 0  # the newest revision the graph reflects
        self._resources: dict[bytes, Resource] = {}  # by key prefix

    def start(self) -> None:
        """Start from an empty graph and a new list of the store (so a stopped collector can start again)."""
        self._graph = Graph()
        self._queue = WorkQueue()
        self._worker = Worker(self._core, self._graph, self._queue.add)
        self._revision = 0
        self._tasks = [asyncio.get_running_loop().create_task(self._follow(), name="capstan-garbage-collector")]

    async def stop(self) -> None:
        await cancel_all(list(self._tasks))
        self._queue.close()

    def running(self) -> bool:
        """Started and not stopped or dead (its /healthz poststarthook check)."""
        return bool(self._tasks) and not self._tasks[0].done()

    def synced(self) -> bool:
        """The first list of the store is in the graph (its /readyz informer-sync check)."""
        return len(self._tasks) > 1

    def idle(self) -> bool:
        """Caught up with the store, and nothing queued, in hand or waiting to be retried."""
        return self._revision >= self._store.current_revision() and self._queue.idle()

    async def _follow(self) -> None:
        while True:
            try:
                await self._watch(await self._list())
            except StoreClosed:
                return
            except StorageError as err:
                log.warning("garbage collector: the store's list or watch failed (%s); listing again", err)
            await asyncio.sleep(RELIST_DELAY)

    async def _list(self) -> int:
        page = await self._store.list(EVERYTHING, limit=LIST_PAGE)
        revision, listed = page.revision, []
        while True:
            listed += [(kv.key, node) for kv in page.kvs if (node := self._node(kv)) is not None]
            if not page.more:
                break
            page = await self._store.list(EVERYTHING, at_revision=revision, start_after=page.kvs[-1].key,
                                          limit=LIST_PAGE)
        self._enqueue(self._graph.replace(listed))
        self._revision = revision
        if len(self._tasks) == 1:
            loop = asyncio.get_running_loop()
            self._tasks += [loop.create_task(self._work(), name=f"capstan-gc-worker-{i}") for i in range(self._workers)]
        return revision

    async def _watch(self, revision: int) -> None:
        changes = self._store.watch(EVERYTHING, from_revision=revision)
        try:
            while True:
                try:
                    events = await changes.next_batch()
                except (WatcherTooSlow, Compacted) as err:
                    log.info("garbage collector: the watch ended (%s); listing again", err)
                    return
                except StopAsyncIteration:
                    return
                for event in events:
                    self._apply(event)
                self._revision = events[-1].revision
        finally:
            changes.close()

    def _apply(self, event: Event) -> None:
        if event.type is EventType.DELETE:
            self._enqueue(self._graph.remove(event.kv.key))
            return
        node = self._node(event.kv)
        if node is not None:
            self._enqueue(self._graph.put(event.kv.key, node))

    def _node(self, kv: KeyValue) -> Node | None:
        """The graph's node for a stored object; None for a key no served resource owns.

        Keys are /<group or "core">/<resource>/[<namespace>/]<name> (server/registry.py).
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

    async def _work(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                await self._worker.do(item)
            except Unresolvable as err:
                log.warning("garbage collector: %s", err)
                self._queue.forget(item)
            except Retry as err:
                log.info("garbage collector: %s; retrying", err)
                self._queue.retry(item)
            except errors.ApiError as err:
                log.warning("garbage collector: %s: %s", item, err)
                if err.code in PERMANENT:
                    self._queue.forget(item)
                else:
                    self._queue.retry(item)
            except Exception:
                log.exception("garbage collector: %s failed; retrying", item)
                self._queue.retry(item)
            else:
                self._queue.forget(item)
            finally:
                self._queue.done(item)
