"""A controller that keeps one object in every namespace (kube-controller-manager's serviceaccounts-controller
and root-ca-cert-publisher share this shape): namespaces and the kept objects are watched through the core,
and each namespace that appears, or whose object is deleted or changed, is queued once and synced by one
worker (nsqueue.py). A failed sync is retried after nsqueue.RETRY seconds; a namespace that is gone or
terminating is skipped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from server import errors
from server.controllers.nsqueue import NamespaceQueue
from server.core import Core
from server.runtime.informer import Informer
from server.runtime.tasks import cancel_all

log = logging.getLogger(__name__)

NAMESPACES = core_pb2.ResourcePath(version="v1", resource="namespaces")

Sync = Callable[[str], Awaitable[None]]


def _active(ns: dict[str, Any]) -> bool:
    m = ns.get("metadata") or {}
    return not m.get("deletionTimestamp") and (ns.get("status") or {}).get("phase") != "Terminating"


class _Namespaces:
    def __init__(self, queue: Callable[[str], None]) -> None:
        self._queue = queue

    def replace(self, objs: list[dict[str, Any]]) -> None:
        for obj in objs:
            self.put(obj)

    def put(self, obj: dict[str, Any]) -> None:
        if _active(obj):
            self._queue(str((obj.get("metadata") or {}).get("name", "")))

    def remove(self, obj: dict[str, Any]) -> None:
        return None


class _Kept:
    """Events of the kept kind: one named `name` that changes or goes queues its namespace."""

    def __init__(self, name: str, queue: Callable[[str], None]) -> None:
        self._name = name
        self._queue = queue

    def replace(self, objs: list[dict[str, Any]]) -> None:
        return None  # the namespaces' own list queues every namespace

    def put(self, obj: dict[str, Any]) -> None:
        self.remove(obj)

    def remove(self, obj: dict[str, Any]) -> None:
        m = obj.get("metadata") or {}
        if m.get("name") == self._name:
            self._queue(str(m.get("namespace", "")))


class PerNamespace:
    def __init__(self, core: Core, *, kept: core_pb2.ResourcePath, name: str, sync: Sync, label: str) -> None:
        self._core = core
        self._sync = sync
        self._label = label
        self._queue = NamespaceQueue(self._sync_one)
        self._informers = (Informer(core, NAMESPACES, _Namespaces(self.queue)),
                           Informer(core, kept, _Kept(name, self.queue)))
        self._task: asyncio.Task[None] | None = None

    def queue(self, namespace: str) -> None:
        if namespace:
            self._queue.add(namespace)

    async def start(self) -> None:
        """Returns once every namespace that exists now is synced, so a server that has started already has the
        kept object everywhere (later namespaces get theirs from the worker)."""
        for informer in self._informers:
            await informer.start()
        await self._queue.drain()
        self._task = asyncio.get_running_loop().create_task(self._queue.run(), name=f"capstan-{self._label}")

    async def stop(self) -> None:
        for informer in self._informers:
            await informer.stop()
        await cancel_all((self._task,))

    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _sync_one(self, namespace: str) -> None:
        try:
            await self._sync(namespace)
        except errors.ApiError as err:
            if err.status.code in (403, 404):
                return  # the namespace is gone or terminating: nothing to keep there
            log.warning("%s: syncing namespace %s failed: %s", self._label, namespace, err.status.message)
            self._queue.retry_later(namespace)
        except Exception:
            log.exception("%s: syncing namespace %s failed", self._label, namespace)
            self._queue.retry_later(namespace)
