"""Namespace deletion: empty a terminating namespace, then let it go (kube's namespace controller).

When a namespace is marked for deletion (phase Terminating), every namespaced
object in it is deleted; objects held by finalizers are waited for. Once nothing
is left, the `kubernetes` finalizer is removed through the `finalize`
subresource, and the core deletes the namespace when no finalizer remains.

Elected (server/runtime/election.py): every core keeps the index of terminating namespaces from its
informer (the core refuses creates in them), but only the leader empties them. A leader that starts finalizes
every namespace already terminating, so a deletion begun under a leader that died completes under the next.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.kinds import NAMESPACE_FINALIZER
from server.machinery import errors
from server.objects.core import Core
from server.objects.namespaces import is_terminating
from server.runtime.informer import Handlers, SharedInformers, Subscriptions
from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue

log = logging.getLogger(__name__)

NAMESPACES = core_pb2.ResourcePath(version="v1", resource="namespaces")
RECHECK = (0.05, 0.1, 0.2, 0.5, 1.0)  # seconds between looks at a namespace still holding objects
WORKERS = 10  # namespaces emptied at once (kube-controller-manager's --concurrent-namespace-syncs)
Obj = dict[str, Any]


class NamespaceController:
    """The namespaces' informer keeps the index; while leading, each terminating namespace is queued for the
    workers, which empty it and requeue it (RECHECK) while something is left."""

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        self._core = core
        self._index = core.context.namespaces
        self._subscriptions = Subscriptions()
        self._informer = self._subscriptions.add(
            (informers or SharedInformers(core)).informer(NAMESPACES),
            Handlers(on_add=lambda ns, _: self._seen(ns), on_update=lambda _, ns: self._seen(ns), on_delete=self._gone))
        self._terminating: set[str] = set()  # names seen with a deletionTimestamp
        self._attempts: dict[str, int] = {}  # looks at a namespace still holding objects, so far
        self._leading = False
        self._worker = self._new_worker()

    def _new_worker(self) -> Worker[str]:
        return Worker(WorkQueue(ExponentialBackoff()), self._finalize, name="capstan-namespace-controller",
                      count=WORKERS, retry=self._failed)

    async def start(self) -> None:
        """Follow the namespaces (the index, filled before returning); deleting them waits for lead()."""
        await self._subscriptions.start()

    async def stop(self) -> None:
        await self._subscriptions.stop()
        await self._worker.stop()

    def lead(self) -> None:
        """Finalize terminating namespaces: those seen so far now, later ones as they come."""
        self._leading = True
        if self._worker.queue.shutting_down():
            self._worker = self._new_worker()
        self._worker.start()
        for name in sorted(self._terminating):
            self._worker.queue.add(name)

    async def unlead(self) -> None:
        """Stop finalizing at once (another core leads now)."""
        self._leading = False
        await self._worker.stop()
        self._attempts.clear()

    def leading(self) -> bool:
        return self._leading

    def running(self) -> bool:
        """Started and not stopped or dead (its /healthz poststarthook check)."""
        return self._informer.running()

    def _seen(self, ns: Obj) -> None:
        name = str((ns.get("metadata") or {}).get("name"))
        self._index.observe(name, is_terminating(ns))
        if not (ns.get("metadata") or {}).get("deletionTimestamp"):
            return
        self._terminating.add(name)
        if self._leading:
            self._worker.queue.add(name)

    def _gone(self, ns: Obj) -> None:
        name = str((ns.get("metadata") or {}).get("name"))
        self._index.forget(name)
        self._terminating.discard(name)
        self._attempts.pop(name, None)

    async def _finalize(self, name: str) -> None:
        """Delete what is left; once nothing is, remove the `kubernetes` finalizer through /finalize."""
        if await self._remaining(name):
            attempt = self._attempts.get(name, 0)
            self._attempts[name] = attempt + 1
            self._worker.queue.add_after(name, RECHECK[min(attempt, len(RECHECK) - 1)])
            return
        self._attempts.pop(name, None)
        try:
            got = await self._core.get(core_pb2.GetRequest(path=_ns_path(name)))
        except errors.ApiError:
            return  # already gone
        ns = orjson.loads(got.object.data)
        finalizers = [f for f in ns.get("spec", {}).get("finalizers", []) if f != NAMESPACE_FINALIZER]
        ns.setdefault("spec", {})["finalizers"] = finalizers
        path = _ns_path(name)
        path.subresource = "finalize"
        with contextlib.suppress(errors.ApiError):
            await self._core.update(core_pb2.UpdateRequest(
                path=path, object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(ns))))

    def _failed(self, name: str, err: Exception) -> bool:
        log.warning("namespace %s: emptying it failed: %s", name, err)
        return True

    async def _remaining(self, name: str) -> int:
        """Delete what is left in the namespace; how many objects still remain (held by finalizers)."""
        remaining = 0
        for resource in self._core.registry.namespaced():
            if "list" not in resource.verbs:  # answered, never stored (localsubjectaccessreviews)
                continue
            path = core_pb2.ResourcePath(group=resource.group, version=resource.version,
                                         resource=resource.resource, namespace=name)
            if "deletecollection" in resource.verbs:
                with contextlib.suppress(errors.ApiError):
                    await self._core.delete_collection(core_pb2.DeleteCollectionRequest(path=path))
            listed = await self._core.list(core_pb2.ListRequest(path=path))
            remaining += len(listed.items)
        return remaining


def _ns_path(name: str) -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(version="v1", resource="namespaces", name=name)
