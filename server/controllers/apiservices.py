"""A Local APIService for every group version Capstan serves, kept current as CustomResourceDefinitions come
and go, as kube-apiserver's autoregister and crdRegistration controllers keep them.

Built-in group versions get kube's priorities (cmd/kube-apiserver/app/aggregator.go, apiVersionPriorities) and the
label kube-aggregator.kubernetes.io/automanaged=onstart; a group version kube's table does not name is not
registered, as kube skips it. A CRD's group versions get groupPriorityMinimum 1000, versionPriority 100 and
automanaged=true. Every one is Available:

    v1.apps  {"spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15},
              "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local",
                                         "message": "Local APIServices are always available"}]}}

An automanaged APIService whose group version is no longer served (its CRD deleted) is deleted; one a user
created (no automanaged label) is left alone. A singleton (server/runtime/election.py): the leader writes,
and every core's registry serves the same CRDs, so the leader's view is the cluster's. It syncs at start and
whenever what the registry serves changes (one key on a work queue: changes while a sync runs make one more
sync; a failed sync is retried with backoff).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.kinds import BUILTIN, admissionpolicies
from server.machinery import errors, meta
from server.machinery.concurrently import each
from server.machinery.values import Obj
from server.objects.core import Core
from server.registry.priorities import CRD_GROUP_PRIORITY, CRD_VERSION_PRIORITY, PRIORITIES
from server.runtime.election import Singleton
from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue

log = logging.getLogger(__name__)

PATH = core_pb2.ResourcePath(group="apiregistration.k8s.io", version="v1", resource="apiservices")
AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"
ON_START, CRD_MANAGED = "onstart", "true"
# The built-in group versions, those served only when --runtime-config turns them on included.
BUILTIN_VERSIONS = frozenset((r.group, r.version) for r in (
    *BUILTIN, *admissionpolicies.V1BETA1, *admissionpolicies.V1ALPHA1)) | {("", "v1")}
AVAILABLE = {
    "type": "Available",
    "status": "True",
    "reason": "Local",
    "message": "Local APIServices are always available",
}

def api_service_name(group: str, version: str) -> str:
    return f"{version}.{group}"


def local_api_service(group: str, version: str, *, crd: bool) -> Obj | None:
    """The APIService kube registers for a served group version; None for a built-in one kube does not name."""
    if crd:
        priorities, label = (CRD_GROUP_PRIORITY, CRD_VERSION_PRIORITY), CRD_MANAGED
    elif (group, version) in PRIORITIES:
        priorities, label = PRIORITIES[(group, version)], ON_START
    else:
        return None
    spec: Obj = {"version": version, "groupPriorityMinimum": priorities[0], "versionPriority": priorities[1]}
    if group:
        spec = {"group": group, **spec}
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": api_service_name(group, version), "labels": {AUTOMANAGED: label}},
        "spec": spec,
    }


def desired(served: Iterable[tuple[str, str, bool]]) -> dict[str, Obj]:
    """The APIServices for (group, version, from a CRD) triples, by name."""
    wanted: dict[str, Obj] = {}
    for group, version, crd in served:
        service = local_api_service(group, version, crd=crd)
        if service is not None:
            wanted.setdefault(service["metadata"]["name"], service)
    return wanted


def _raw(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


class APIServiceController:
    SYNC = "sync"  # the queue's one key: what is served as a whole

    def __init__(self, core: Core) -> None:
        self._core = core
        self._worker: Worker[str] | None = None
        self._unsubscribe: Callable[[], None] | None = None

    async def start(self) -> None:
        """Sync once (so the APIServices are there when the core leads), then follow the registry."""
        queue: WorkQueue[str] = WorkQueue(ExponentialBackoff(0.5, 30.0))
        self._worker = Worker(queue, self._sync, name="capstan-apiservice-controller", retry=_retry)
        self._unsubscribe = self._core.registry.on_change(lambda: queue.add(self.SYNC))
        await self.sync()
        self._worker.start()

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._worker is not None:
            await self._worker.stop()
            self._worker = None

    def _served(self) -> list[tuple[str, str, bool]]:
        return [(r.group, r.version, (r.group, r.version) not in BUILTIN_VERSIONS) for r in self._core.registry]

    async def _sync(self, key: str) -> None:
        await self.sync()

    async def sync(self) -> None:
        """Create or update every wanted APIService, delete automanaged ones no longer served."""
        wanted = desired(self._served())
        listed = await self._core.list(core_pb2.ListRequest(path=PATH))
        stored = {meta.meta(o).get("name", ""): o for o in map(orjson.loads, listed.items)}
        await each(self._ensure(service, stored.get(name)) for name, service in wanted.items())
        for name, obj in stored.items():
            label = (meta.meta(obj).get("labels") or {}).get(AUTOMANAGED)
            if name not in wanted and label in (ON_START, CRD_MANAGED):
                try:
                    await self._core.delete(core_pb2.DeleteRequest(path=_named(name)))
                except errors.ApiError as err:
                    if err.code != 404:
                        raise

    async def _ensure(self, service: Obj, stored: Obj | None) -> None:
        if stored is None:
            try:
                created = await self._core.create(core_pb2.CreateRequest(path=PATH, object=_raw(service)))
                stored = orjson.loads(created.object.data)
            except errors.ApiError as err:
                if err.code != 409:
                    raise
                return  # another writer made it; the next sync looks again
        elif (
            stored.get("spec") != service["spec"]
            or (meta.meta(stored).get("labels") or {}).get(AUTOMANAGED) != service["metadata"]["labels"][AUTOMANAGED]
        ):
            stored["spec"] = service["spec"]
            meta.meta(stored).setdefault("labels", {})[AUTOMANAGED] = service["metadata"]["labels"][AUTOMANAGED]
            stored = orjson.loads(
                (
                    await self._core.update(
                        core_pb2.UpdateRequest(path=_named(meta.meta(stored)["name"]), object=_raw(stored))
                    )
                ).object.data
            )
        assert stored is not None
        conditions = (stored.get("status") or {}).get("conditions") or []
        if any(all(c.get(k) == v for k, v in AVAILABLE.items()) for c in conditions):
            return
        stored["status"] = {"conditions": [{**AVAILABLE, "lastTransitionTime": meta.now()}]}
        path = _named(meta.meta(stored)["name"])
        path.subresource = "status"
        await self._core.update(core_pb2.UpdateRequest(path=path, object=_raw(stored)))


def _retry(key: str, err: Exception) -> bool:
    """A conflict with a concurrent writer is retried; so is any other failure, logged."""
    log.warning("APIService sync failed: %s", err)
    return True


def _named(name: str) -> core_pb2.ResourcePath:
    path = core_pb2.ResourcePath()
    path.CopyFrom(PATH)
    path.name = name
    return path


def singletons(core: Core) -> list[Singleton]:
    controller = APIServiceController(core)
    return [Singleton("APIServiceController", controller.start, controller.stop)]
