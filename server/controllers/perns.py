"""A controller that keeps one object in every namespace (kube-controller-manager's serviceaccounts-controller
and root-ca-cert-publisher share this shape): namespaces and the kept objects are followed by informers
(server/runtime/informer.py), and each namespace that appears, or whose object is deleted or changed, is
queued once (server/runtime/workqueue.py) and synced by one worker. A failed sync is retried after RETRY
seconds; a namespace that is gone or terminating is skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.objects.core import Core
from server.runtime.informer import Handlers, SharedInformers, Subscriptions, resource_version
from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue

log = logging.getLogger(__name__)

NAMESPACES = core_pb2.ResourcePath(version="v1", resource="namespaces")
RETRY = 1.0  # seconds before a failed namespace is synced again

Sync = Callable[[str], Awaitable[None]]
Obj = dict[str, Any]


def _active(ns: Obj) -> bool:
    m = ns.get("metadata") or {}
    return not m.get("deletionTimestamp") and (ns.get("status") or {}).get("phase") != "Terminating"


def _namespace(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("namespace", ""))


class PerNamespace:
    def __init__(self, core: Core, *, kept: core_pb2.ResourcePath, name: str, sync: Sync, label: str,
                 informers: SharedInformers | None = None) -> None:
        informers = informers or SharedInformers(core)
        self._name = name
        self._sync = sync
        self._label = label
        self._worker = self._new_worker()
        self._subscriptions = Subscriptions()
        self._subscriptions.add(informers.informer(NAMESPACES), Handlers(
            on_add=lambda ns, _: self._namespace_seen(ns), on_update=lambda _, ns: self._namespace_seen(ns)))
        self._subscriptions.add(informers.informer(kept, field_selector=f"metadata.name={name}"), Handlers(
            on_add=self._kept_added, on_update=self._kept_updated, on_delete=self._kept_changed))

    def _new_worker(self) -> Worker[str]:
        return Worker(WorkQueue(ExponentialBackoff(RETRY, RETRY)), self._sync, name=f"capstan-{self._label}",
                      retry=self._failed)

    def queue(self, namespace: str) -> None:
        if namespace:
            self._worker.queue.add(namespace)

    async def start(self) -> None:
        """Returns once every namespace that exists now is synced, so a server that has started already has the
        kept object everywhere (later namespaces get theirs from the worker)."""
        if self._worker.queue.shutting_down():
            self._worker = self._new_worker()
        await self._subscriptions.start()
        await self._worker.drain()
        self._worker.start()

    async def stop(self) -> None:
        await self._subscriptions.stop()
        await self._worker.stop()

    def running(self) -> bool:
        return self._worker.running()

    def _namespace_seen(self, ns: Obj) -> None:
        if _active(ns):
            self.queue(str((ns.get("metadata") or {}).get("name", "")))

    def _kept_added(self, obj: Obj, initial: bool) -> None:
        if not initial:  # the namespaces' own list queues every namespace
            self._kept_changed(obj)

    def _kept_updated(self, old: Obj, new: Obj) -> None:
        if resource_version(old) != resource_version(new):
            self._kept_changed(new)

    def _kept_changed(self, obj: Obj) -> None:
        """One named `name` that changes or goes queues its namespace."""
        if (obj.get("metadata") or {}).get("name") == self._name:
            self.queue(_namespace(obj))

    def _failed(self, namespace: str, err: Exception) -> bool:
        if isinstance(err, errors.ApiError):
            if err.status.code in (403, 404):
                return False  # the namespace is gone or terminating: nothing to keep there
            log.warning("%s: syncing namespace %s failed: %s", self._label, namespace, err.status.message)
        else:
            log.error("%s: syncing namespace %s failed", self._label, namespace, exc_info=err)
        return True
