"""Namespace deletion: empty a terminating namespace, then let it go (kube's namespace controller).

When a namespace is marked for deletion (phase Terminating), every namespaced
object in it is deleted; objects held by finalizers are waited for. Once nothing
is left, the `kubernetes` finalizer is removed through the `finalize`
subresource, and the core deletes the namespace when no finalizer remains.

Elected (server/runtime/election.py): every core keeps the index of terminating namespaces from the
watch (the core refuses creates in them), but only the leader empties them. A leader that starts finalizes
every namespace already terminating, so a deletion begun under a leader that died completes under the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server import errors
from server.core import Core
from server.kinds import NAMESPACE_FINALIZER
from server.objects.namespaces import is_terminating
from server.runtime.tasks import cancel_all

log = logging.getLogger(__name__)

NAMESPACES = core_pb2.ResourcePath(version="v1", resource="namespaces")
RECHECK = (0.05, 0.1, 0.2, 0.5, 1.0)  # seconds between looks at a namespace still holding objects


class NamespaceController:
    def __init__(self, core: Core) -> None:
        self._core = core
        self._index = core.context.namespaces
        self._running: dict[str, asyncio.Task[None]] = {}
        self._terminating: set[str] = set()  # names seen with a deletionTimestamp
        self._leading = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Follow the namespaces (the index); deleting them waits for lead()."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="capstan-namespace-controller")

    async def stop(self) -> None:
        await cancel_all((self._task, *self._running.values()))

    def lead(self) -> None:
        """Finalize terminating namespaces: those seen so far now, later ones as they come."""
        self._leading = True
        for name in sorted(self._terminating):
            self._finalize_soon(name)

    async def unlead(self) -> None:
        """Stop finalizing at once (another core leads now)."""
        self._leading = False
        await cancel_all(list(self._running.values()))

    def leading(self) -> bool:
        return self._leading

    def running(self) -> bool:
        """Started and not stopped or dead (its /healthz poststarthook check)."""
        return self._task is not None and not self._task.done()

    async def _run(self) -> None:
        while True:
            try:
                async for response in self._core.watch(core_pb2.WatchRequest(path=NAMESPACES)):
                    for event in response.events:
                        if event.type == "BOOKMARK":
                            continue
                        ns = orjson.loads(event.object.data)
                        if event.type == "DELETED":
                            self._index.forget(ns["metadata"]["name"])
                            self._terminating.discard(ns["metadata"]["name"])
                        elif event.type in ("ADDED", "MODIFIED"):
                            self._index.observe(ns["metadata"]["name"], is_terminating(ns))
                            self._consider(ns)
            except errors.ApiError as err:
                log.warning("namespace watch ended: %s", err)
            await asyncio.sleep(0.1)  # the watch ended (dropped as too slow, say): watch again

    def _consider(self, ns: dict[str, object]) -> None:
        metadata = ns.get("metadata")
        if not isinstance(metadata, dict) or not metadata.get("deletionTimestamp"):
            return
        name = str(metadata.get("name"))
        self._terminating.add(name)
        if self._leading:
            self._finalize_soon(name)

    def _finalize_soon(self, name: str) -> None:
        if name not in self._running:
            task = asyncio.get_running_loop().create_task(self._finalize(name))
            self._running[name] = task
            task.add_done_callback(lambda _: self._running.pop(name, None))

    async def _finalize(self, name: str) -> None:
        attempt = 0
        while await self._remaining(name):
            await asyncio.sleep(RECHECK[min(attempt, len(RECHECK) - 1)])
            attempt += 1
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
