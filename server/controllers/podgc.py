"""The pod garbage collector, as kube-controller-manager 1.28's podgc (pkg/controller/podgc): every `period`
seconds it deletes, with grace period 0, the Pods nothing else will:

- terminated Pods (Succeeded or Failed) beyond `terminated_threshold` (--terminated-pod-gc-threshold, 12500;
  0 turns this off), the evicted (status.reason Evicted) first, then the oldest by creationTimestamp;
- terminating Pods on a node that is not Ready and carries the out-of-service taint
  (node.kubernetes.io/out-of-service), first marked Failed;
- orphaned Pods, bound to a Node that does not exist: a missing node is checked again (a read of the Node, not
  the cache) once it has been missing for `quarantine` seconds (40 s); its Pods are then marked Failed with the
  DisruptionTarget condition (reason DeletionByPodGC, "PodGC: node no longer exists");
- terminating Pods that were never scheduled (no spec.nodeName).
Marking Failed applies only to a Pod not already terminal; writes use the field manager PodGC where kube's
server-side apply does (here a merge patch of pods/status).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import orjson

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.kinds.tolerations import OUT_OF_SERVICE
from server.machinery import errors
from server.objects.core import Core
from server.runtime.informer import Handlers, SharedInformers, Subscriptions
from server.runtime.tasks import cancel_all

log = logging.getLogger(__name__)

Obj = dict[str, Any]
PODS = core_pb2.ResourcePath(version="v1", resource="pods")
NODES = core_pb2.ResourcePath(version="v1", resource="nodes")
MANAGER = "PodGC"
PARALLEL = 16  # deletes in flight at once


@dataclass(frozen=True)
class PodGCConfig:
    terminated_threshold: int = 12500
    period: float = 20.0  # gcCheckPeriod
    quarantine: float = 40.0  # quarantineTime


def _meta(obj: Obj) -> Obj:
    return dict(obj.get("metadata") or {})


def terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def gc_order(pod: Obj) -> tuple[int, str]:
    """byEvictionAndCreationTimestamp: evicted Pods first, then the oldest."""
    evicted = (pod.get("status") or {}).get("reason") == "Evicted"
    return (0 if evicted else 1), str(_meta(pod).get("creationTimestamp") or "")


class PodGC:
    def __init__(self, core: Core, informers: SharedInformers, config: PodGCConfig = PodGCConfig()) -> None:
        self._core = core
        self.config = config
        self._subscriptions = Subscriptions()
        self.pods = self._subscriptions.add(informers.informer(PODS), Handlers()).cache
        self.nodes = self._subscriptions.add(informers.informer(NODES), Handlers()).cache
        self._missing: dict[str, float] = {}  # node name -> monotonic time first seen missing
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._subscriptions.start()
        self._task = asyncio.get_running_loop().create_task(self._every(), name="capstan-podgc")

    async def stop(self) -> None:
        await cancel_all((self._task,))
        self._task = None
        await self._subscriptions.stop()
        self._missing.clear()

    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _every(self) -> None:
        while True:
            await asyncio.sleep(self.config.period)
            try:
                await self.gc()
            except Exception:
                log.exception("podgc: a pass failed")

    async def gc(self) -> None:
        """One pass (kube's gc): terminated, terminating on out-of-service nodes, orphaned, unscheduled."""
        pods = self.pods.values()
        if self.config.terminated_threshold > 0:
            done = sorted((p for p in pods if terminal(p)), key=gc_order)
            excess = len(done) - self.config.terminated_threshold
            if excess > 0:
                await self._all(self._delete(p, mark=False) for p in done[:excess])
        await self._all(self._delete(p) for p in pods if self._out_of_service(p))
        await self._all(self._delete(p, orphaned=True) for p in await self._orphans(pods))
        await self._all(self._delete(p, mark=False) for p in pods
                        if _meta(p).get("deletionTimestamp") and not (p.get("spec") or {}).get("nodeName"))

    def _out_of_service(self, pod: Obj) -> bool:
        if not _meta(pod).get("deletionTimestamp"):
            return False
        node = self.nodes.get(("", str((pod.get("spec") or {}).get("nodeName") or "")))
        if node is None:
            return False
        ready = next((c for c in (node.get("status") or {}).get("conditions") or []
                      if isinstance(c, dict) and c.get("type") == "Ready"), {})
        taints = (node.get("spec") or {}).get("taints") or []
        return ready.get("status") != "True" and any(
            isinstance(t, dict) and t.get("key") == OUT_OF_SERVICE and t.get("effect") == "NoExecute" for t in taints)

    async def _orphans(self, pods: list[Obj]) -> list[Obj]:
        now = time.monotonic()
        wanted = {str((p.get("spec") or {}).get("nodeName") or "") for p in pods} - {""}
        missing = {name for name in wanted if ("", name) not in self.nodes}
        self._missing = {name: self._missing.get(name, now) for name in missing}
        gone = set()
        for name, since in self._missing.items():
            if now - since >= self.config.quarantine and not await self._exists(name):
                gone.add(name)
        return [p for p in pods if (p.get("spec") or {}).get("nodeName") in gone]

    async def _exists(self, name: str) -> bool:
        try:
            await self._core.get(core_pb2.GetRequest(path=core_pb2.ResourcePath(version="v1", resource="nodes",
                                                                               name=name)))
        except errors.ApiError as err:
            if err.code == 404:
                return False
            raise
        return True

    async def _all(self, deletes: Any) -> None:
        gate = asyncio.Semaphore(PARALLEL)

        async def one(delete: Any) -> None:
            async with gate:
                await delete

        await asyncio.gather(*(one(d) for d in deletes))

    async def _delete(self, pod: Obj, *, mark: bool = True, orphaned: bool = False) -> None:
        """markFailedAndDeletePodWithCondition, then a delete with grace period 0 and the uid as precondition."""
        m = _meta(pod)
        namespace, name, uid = str(m.get("namespace", "")), str(m.get("name", "")), str(m.get("uid", ""))
        at = core_pb2.ResourcePath(version="v1", resource="pods", namespace=namespace, name=name)
        try:
            if mark and not terminal(pod):
                status: Obj = {"phase": "Failed"}
                if orphaned:
                    conditions = [c for c in (pod.get("status") or {}).get("conditions") or []
                                  if isinstance(c, dict) and c.get("type") != "DisruptionTarget"]
                    conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                                       "message": "PodGC: node no longer exists",
                                       "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
                    status["conditions"] = conditions
                request = core_pb2.PatchRequest(path=core_pb2.ResourcePath(
                    version="v1", resource="pods", namespace=namespace, name=name, subresource="status"),
                    type=core_pb2.PATCH_TYPE_MERGE, patch=orjson.dumps({"status": status}))
                request.options.fieldManager = MANAGER
                await self._core.patch(request)
            options = meta_pb2.DeleteOptions(gracePeriodSeconds=0, preconditions=meta_pb2.Preconditions(uid=uid))
            await self._core.delete(core_pb2.DeleteRequest(path=at, options=options))
        except errors.ApiError as err:
            if err.code not in (404, 409):
                log.warning("podgc: deleting pod %s/%s: %s", namespace, name, err.status.message)
