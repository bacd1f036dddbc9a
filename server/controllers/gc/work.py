"""What the collector does for one item of work, through the core's own verbs.

Every decision reads the object (and its owners) from the core first: the graph
says what to look at, the API says what is true. Every write is an ordinary
get, merge patch (with the resourceVersion read as its precondition) or delete
(with the uid as its precondition), as kube-controller-manager's garbage
collector makes them, so each has its event and resourceVersion.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.gc.graph import Check, Graph, Identity, Orphan, OwnerRef, Work, owner_refs
from server.machinery import errors
from server.machinery.values import Obj
from server.objects.core import Core
from server.objects.delete import FOREGROUND_FINALIZER, ORPHAN_FINALIZER

FIELD_MANAGER = "kube-controller-manager"  # what kube-apiserver records for the collector's writes
PATCH_ATTEMPTS = 5  # reads and patches of one object before the item is retried later


class Retry(Exception):
    """The item could not be done now (an unknown owner kind, an object changing under us): try again later."""


class Unresolvable(Exception):
    """The item can never be done: a cluster-scoped object naming a namespaced owner. Left alone."""


class Worker:
    def __init__(self, core: Core, graph: Graph, requeue: Callable[[Work], None]) -> None:
        self._core = core
        self._graph = graph
        self._requeue = requeue

    async def do(self, item: Work) -> None:
        match item:
            case Check(uid):
                await self._check(uid)
            case Orphan(owner):
                await self._orphan(owner)

    async def _check(self, uid: str) -> None:
        """attemptToDeleteItem: delete the object if no owner it names still exists, drop the references
        to absent owners (or owners deleting their dependents) if one does, and let an owner being
        deleted in the foreground go once no dependent blocks it."""
        node = self._graph.node(uid)
        if node is None or (node.being_deleted and not node.deleting_dependents):
            return  # gone (its DELETED event checks its dependents), or going: nothing to decide
        latest = await self._get(node.identity)
        if latest is None:
            return  # deleted or replaced: the watch brings that event next
        if node.deleting_dependents:
            await self._finish_foreground(node.identity)
            return
        refs = owner_refs(latest)
        if not refs:
            return
        solid, dangling, waiting = await self._classify(node.identity, refs)
        if solid:
            if dangling or waiting:
                await self._drop_references(node.identity, {r.uid for r in (*dangling, *waiting)})
            return
        dependents = self._graph.dependents(uid)
        if waiting and dependents:
            # An owner waits for this object's deletion, and the object has dependents of its own: delete it
            # in the foreground too, so the owner waits for them as well. A dependent also deleting its
            # dependents may be part of a cycle, which unblocking this object's references breaks.
            if any(d.deleting_dependents for d in dependents):
                await self._unblock_references(node.identity)
            await self._delete(node.identity, "Foreground")
            return
        finalizers = latest["metadata"].get("finalizers") or ()
        policy = ("Orphan" if ORPHAN_FINALIZER in finalizers
                  else "Foreground" if FOREGROUND_FINALIZER in finalizers else "Background")
        await self._delete(node.identity, policy)

    async def _finish_foreground(self, owner: Identity) -> None:
        """processDeletingDependentsItem: remove `foregroundDeletion` once no dependent blocks the owner."""
        blocking = self._graph.blocking_dependents(owner.uid)
        if not blocking:
            await self._patch_metadata(owner, lambda m: _without_finalizer(m, FOREGROUND_FINALIZER))
            return
        for dependent in blocking:
            if not dependent.deleting_dependents:
                self._requeue(Check(dependent.identity.uid))

    async def _orphan(self, owner: Identity) -> None:
        """attemptToOrphan: remove the owner's reference from every dependent, then the `orphan` finalizer."""
        await _all(self._drop_references(d.identity, {owner.uid}) for d in self._graph.dependents(owner.uid))
        await self._patch_metadata(owner, lambda m: _without_finalizer(m, ORPHAN_FINALIZER))

    async def _classify(
        self, item: Identity, refs: Iterable[OwnerRef]
    ) -> tuple[list[OwnerRef], list[OwnerRef], list[OwnerRef]]:
        """The references to owners that exist, to owners that do not (dangling), and to owners deleting
        their dependents in the foreground (waiting)."""
        solid: list[OwnerRef] = []
        dangling: list[OwnerRef] = []
        waiting: list[OwnerRef] = []
        for ref in refs:
            owner = await self._owner(item, ref)
            if owner is None:
                dangling.append(ref)
            elif _deleting_dependents(owner):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    async def _owner(self, item: Identity, ref: OwnerRef) -> Obj | None:
        """The owner a reference names, as it is now; None when it is certainly absent: not found by the
        reference's kind and name, or found with another uid. A namespaced owner is looked up in the
        dependent's namespace, a cluster-scoped one cluster-wide."""
        if not (ref.api_version and ref.kind and ref.name):
            raise Unresolvable(f"{item}: an ownerReference without apiVersion, kind or name")
        group, _, version = ref.api_version.rpartition("/")
        resource = self._core.registry.by_kind(group, version, ref.kind)
        if resource is None:
            raise Retry(f"{item}: no resource serves the owner's kind {ref.kind} in {ref.api_version}")
        if resource.namespaced and not item.namespace:
            raise Unresolvable(f"{item} is cluster-scoped, but names a namespaced owner ({ref.kind} {ref.name})")
        path = core_pb2.ResourcePath(group=resource.group, version=resource.version, resource=resource.resource,
                                     namespace=item.namespace if resource.namespaced else "", name=ref.name)
        return await self._read(path, ref.uid)

    async def _get(self, identity: Identity) -> Obj | None:
        return await self._read(_path(identity), identity.uid)

    async def _read(self, path: core_pb2.ResourcePath, uid: str) -> Obj | None:
        """The object at `path` if it is the one with `uid`; None if it is absent or another one."""
        try:
            got = await self._core.get(core_pb2.GetRequest(path=path))
        except errors.ApiError as err:
            if err.code == 404:
                return None
            raise
        obj: Obj = orjson.loads(got.object.data)
        return obj if obj["metadata"].get("uid") == uid else None

    async def _delete(self, identity: Identity, policy: str) -> None:
        options = meta_pb2.DeleteOptions(
            propagationPolicy=policy, preconditions=meta_pb2.Preconditions(uid=identity.uid))
        try:
            await self._core.delete(core_pb2.DeleteRequest(path=_path(identity), options=options))
        except errors.ApiError as err:
            if err.code != 404:
                raise

    async def _drop_references(self, identity: Identity, owners: set[str]) -> None:
        def change(m: Obj) -> Obj | None:
            refs: list[Any] = m.get("ownerReferences") or []
            kept = [r for r in refs if r.get("uid") not in owners]
            return None if len(kept) == len(refs) else {"ownerReferences": kept or None}

        await self._patch_metadata(identity, change)

    async def _unblock_references(self, identity: Identity) -> None:
        def change(m: Obj) -> Obj | None:
            refs: list[Any] = m.get("ownerReferences") or []
            if not any(r.get("blockOwnerDeletion") for r in refs):
                return None
            return {"ownerReferences": [{**r, "blockOwnerDeletion": False} if r.get("blockOwnerDeletion") else r
                                        for r in refs]}

        await self._patch_metadata(identity, change)

    async def _patch_metadata(self, identity: Identity, change: Callable[[Obj], Obj | None]) -> None:
        """Merge-patch the object's metadata with what `change` makes of the current metadata, the
        resourceVersion read being the precondition; read again on a conflict. Nothing to do when the
        object is gone or `change` answers None."""
        for _ in range(PATCH_ATTEMPTS):
            obj = await self._get(identity)
            if obj is None:
                return
            patch = change(obj["metadata"])
            if patch is None:
                return
            patch["resourceVersion"] = obj["metadata"]["resourceVersion"]
            request = core_pb2.PatchRequest(
                path=_path(identity), type=core_pb2.PATCH_TYPE_MERGE, patch=orjson.dumps({"metadata": patch}),
                options=meta_pb2.PatchOptions(fieldManager=FIELD_MANAGER))
            try:
                await self._core.patch(request)
                return
            except errors.ApiError as err:
                if err.code == 404:
                    return
                if err.code != 409:
                    raise
        raise Retry(f"{identity}: changed under every one of {PATCH_ATTEMPTS} patches")


def _path(identity: Identity) -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group=identity.group, version=identity.version, resource=identity.resource,
                                 namespace=identity.namespace, name=identity.name)


def _deleting_dependents(obj: Obj) -> bool:
    m = obj["metadata"]
    return bool(m.get("deletionTimestamp")) and FOREGROUND_FINALIZER in (m.get("finalizers") or ())


def _without_finalizer(m: Obj, finalizer: str) -> Obj | None:
    finalizers: list[str] = m.get("finalizers") or []
    if finalizer not in finalizers:
        return None
    return {"finalizers": [f for f in finalizers if f != finalizer] or None}


async def _all(calls: Iterable[Any]) -> None:
    """Run the calls together; raise the first failure once all have finished."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
