"""The controller shape kube-controller-manager's controllers share: shared informers whose changes queue keys
(namespace, name), and workers syncing the queued keys through the core's verbs with kube-controller-manager's
field manager, so every step is an ordinary write with its event and resourceVersion.

Contracts:
- a key whose sync fails is queued again after `backoff` seconds: (RETRY, RETRY) by default, a constant delay;
  a controller may double it per failure up to a cap (client-go's exponential failure rate limiter), reset when
  a sync succeeds;
- `queue_after` syncs a key once a delay has passed (minReadySeconds, progress deadlines);
- `start()` returns once the informers have listed and what they listed is synced.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.objects.core import Core
from server.runtime.informer import Handlers, Indexer, SharedInformers, Subscriptions, on_change
from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name)
MANAGER = "kube-controller-manager"
RETRY = 0.5  # seconds before a key whose sync failed is synced again


def key_of(obj: Obj) -> Key:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace", "")), str(metadata.get("name", ""))


def path(resource: str, namespace: str = "", name: str = "", *, group: str = "", version: str = "v1",
         subresource: str = "") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group=group, version=version, resource=resource, namespace=namespace, name=name,
                                 subresource=subresource)


def raw(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


def named(at: core_pb2.ResourcePath, name: str, subresource: str = "") -> core_pb2.ResourcePath:
    out = core_pb2.ResourcePath()
    out.CopyFrom(at)
    out.name = name
    if subresource:
        out.subresource = subresource
    return out


def decode(obj: core_pb2.RawObject) -> Obj:
    value = orjson.loads(obj.data if obj.data else obj.json)
    return value if isinstance(value, dict) else {}


class KeyedController:
    """Shared informers (server/runtime/informer.py) whose changes queue keys (namespace, name), and `workers`
    workers syncing the queued keys (server/runtime/worker.py). Subclasses say what to follow and how to sync."""

    name = "controller"
    manager = MANAGER  # the field manager of the controller's writes
    workers = 1
    backoff = (RETRY, RETRY)  # (first delay, cap) in seconds before a failed key is synced again

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        self.core = core
        self._shared = informers or SharedInformers(core)
        self._subscriptions = Subscriptions()
        self._worker = self._new_worker()

    def _new_worker(self) -> Worker[Key]:
        return Worker(WorkQueue(ExponentialBackoff(*self.backoff)), self.sync, name=f"capstan-{self.name}",
                      count=self.workers, retry=self._failed)

    def follow(self, at: core_pb2.ResourcePath, changed: Callable[[Obj | None, Obj | None], None], *,
               field_selector: str = "") -> Indexer[Obj]:
        """The cache of the resource's shared informer (of the objects `field_selector` selects, when given);
        `changed(old, new)` is called on every change while this controller runs (None for a side that does not
        exist)."""
        handlers: Handlers[Obj] = on_change(changed)
        informer = self._shared.informer(at, field_selector=field_selector)
        return self._subscriptions.add(informer, handlers).cache

    def queue(self, key: Key) -> None:
        self._worker.queue.add(key)

    def queue_after(self, key: Key, delay: float) -> None:
        self._worker.queue.add_after(key, max(0.0, delay))

    async def start(self) -> None:
        """Returns once the informers have listed and what they listed is synced."""
        if self._worker.queue.shutting_down():
            self._worker = self._new_worker()
        await self._subscriptions.start()
        self.started()
        await self._worker.drain()
        self._worker.start()

    def started(self) -> None:
        """Called once the caches are filled, before the first sync."""

    async def stop(self) -> None:
        await self._subscriptions.stop()
        await self._worker.stop()

    def running(self) -> bool:
        return self._worker.running()

    def _failed(self, key: Key, err: Exception) -> bool:
        if isinstance(err, errors.ApiError):
            log.info("%s: syncing %s/%s: %s", self.name, *key, err.status.message)
        else:
            log.error("%s: syncing %s/%s failed", self.name, *key, exc_info=err)
        return True

    async def sync(self, key: Key) -> None:
        raise NotImplementedError

    # Writes, as kube-controller-manager makes them.

    async def create(self, at: core_pb2.ResourcePath, obj: Obj) -> Obj:
        request = core_pb2.CreateRequest(path=at, object=raw(obj))
        request.options.fieldManager = self.manager
        return decode((await self.core.create(request)).object)

    async def update(self, at: core_pb2.ResourcePath, obj: Obj, *, subresource: str = "") -> Obj:
        """PUT of obj (its resourceVersion the precondition), or of its /status with subresource="status"."""
        request = core_pb2.UpdateRequest(path=named(at, key_of(obj)[1], subresource), object=raw(obj))
        request.options.fieldManager = self.manager
        return decode((await self.core.update(request)).object)

    async def patch(self, at: core_pb2.ResourcePath, name: str, patch: Obj, *,
                    kind: core_pb2.PatchType = core_pb2.PATCH_TYPE_STRATEGIC_MERGE,
                    subresource: str = "") -> Obj:
        request = core_pb2.PatchRequest(path=named(at, name, subresource), type=kind, patch=orjson.dumps(patch))
        request.options.fieldManager = self.manager
        return decode((await self.core.patch(request)).object)

    async def delete(self, at: core_pb2.ResourcePath, name: str, *, uid: str = "") -> None:
        """Deleted, or already gone; with `uid`, only the object of that uid (kube's Preconditions)."""
        request = core_pb2.DeleteRequest(path=named(at, name))
        if uid:
            request.options.preconditions.uid = uid
        try:
            await self.core.delete(request)
        except errors.ApiError as err:
            if err.code != 404:
                raise
