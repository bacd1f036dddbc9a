"""ResourceQuota status (kube-controller-manager's resourcequota controller): each quota's status.hard is its
spec.hard and status.used what the namespace's objects use of it, recomputed when a quota is new or its spec
changes, when an object of a kind quota tracks (Pods, Services, PersistentVolumeClaims, ConfigMaps, Secrets,
ReplicationControllers, ResourceQuotas) gives usage back (deleted; see _Queue), when a terminating Pod's grace
period ends, and every RESYNC seconds (the quotas' informer's resync) for everything else
(`count/<resource>.<group>` of other kinds), as kube's full resync does. Usage is measured as admission measures it
(server/admission/usage.py), so what the controller writes is what admission charged, and what admission charged for
a write that then failed is given back here.

The kinds quotas count are followed only from the first quota the controller sees on: a cluster without any
ResourceQuota pays no informer of its ConfigMaps, Secrets, Pods, Services, PersistentVolumeClaims or
ReplicationControllers for this controller (nothing a request does not use costs it). Once they are followed,
their first list syncs every namespace with a quota, so what changed before is counted.

A singleton: one per cluster, run by the elected core only (server/runtime/election.py), as
kube-controller-manager runs it under leader election. Status is written with the quota's resourceVersion as
precondition; a conflict (admission charged meanwhile) syncs the namespace again.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.admission.quantities import ResourceList, add, dump, mask, parse, zero
from server.admission.usage import (
    EVALUATORS,
    Evaluator,
    counted,
    deletion_expiry,
    evaluator,
    pod_charged,
    scope_selectors,
)
from server.machinery import errors
from server.objects.core import Core
from server.runtime.informer import Handlers, Informer, SharedInformers, Subscriptions
from server.runtime.tasks import cancel_all
from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue

log = logging.getLogger(__name__)

MANAGER = "kube-controller-manager"
RETRY = 0.5
RESYNC = 10.0
Obj = dict[str, Any]
WATCHED = ("resourcequotas", "pods", "services", "persistentvolumeclaims", "configmaps", "secrets",
           "replicationcontrollers")
# Kinds whose events matter only by their namespace (object counts): no other part of a core caches them whole,
# and holding every ConfigMap and Secret of a cluster in memory costs each write its share of the collector's time.
COUNTED_ONLY = frozenset({"configmaps", "secrets", "replicationcontrollers"})


def _skeleton(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    return {"metadata": {"namespace": meta.get("namespace", ""), "name": meta.get("name", "")}}


class _Queue:
    """Events of one kind: which ones sync the object's namespace again (when it has quotas), as kube's.

    Admission charges every write that uses more, so only what gives usage back is replenished (kube's
    QuotaMonitor): a deletion, a Pod that stops being charged (terminal, or its grace period over), and a
    Service or PersistentVolumeClaim changed (kube compares the old and new type or request; here the new
    object decides). A quota syncs when it is new or its spec.hard changed, never for a status write
    (admission's charges and this controller's own), and at every resync of the quotas' informer. Recomputing
    on every write instead raced the writes admission had charged but not yet stored: a recount that missed
    them wrote the charge back. What the first list holds syncs its namespace.
    """

    def __init__(self, controller: ResourceQuotaController, resource: str) -> None:
        self._controller = controller
        self._resource = resource

    def handlers(self) -> Handlers[Obj]:
        return Handlers(on_add=self._added, on_update=self._updated, on_delete=lambda obj: self._sync(obj, True))

    def _added(self, obj: Obj, initial: bool) -> None:
        self._sync(obj, initial or self._gives_back(obj))

    def _updated(self, old: Obj, new: Obj) -> None:
        self._sync(new, old is new or self._gives_back(new))  # old is new: a resync

    def _gives_back(self, obj: Obj) -> bool:
        if self._resource == "resourcequotas":
            return (obj.get("spec") or {}).get("hard") != (obj.get("status") or {}).get("hard") \
                or "used" not in (obj.get("status") or {})
        if self._resource == "pods":
            return not pod_charged(obj)
        return self._resource in ("services", "persistentvolumeclaims")

    def _sync(self, obj: Obj, wanted: bool) -> None:
        namespace = str((obj.get("metadata") or {}).get("namespace", ""))
        if self._resource == "resourcequotas":
            self._controller.quota_seen(namespace)
        if wanted:
            self._controller.queue(namespace)


class ResourceQuotaController:
    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        informers = informers or SharedInformers(core)
        self._core = core
        self._namespaces: set[str] = set()  # namespaces seen with a quota (a sync forgets those without)
        self._worker = self._new_worker()
        quotas = Informer(core, _path("resourcequotas"), resync=RESYNC)  # its own: the resync is this controller's
        self._subscriptions = Subscriptions()  # the quotas
        self._counted = Subscriptions()  # what quotas count, followed from the first quota seen on
        self._counting: asyncio.Task[None] | None = None  # starting (or having started) self._counted
        for resource in WATCHED:
            if resource == "resourcequotas":
                self._subscriptions.add(quotas, _Queue(self, resource).handlers())
                continue
            if resource in COUNTED_ONLY:  # its own, caching each object's name and namespace alone
                informer = Informer(core, _path(resource), transform=_skeleton)
            else:
                informer = informers.informer(_path(resource))
            self._counted.add(informer, _Queue(self, resource).handlers())

    def _new_worker(self) -> Worker[str]:
        return Worker(WorkQueue(ExponentialBackoff(RETRY, RETRY)), self._sync, name="capstan-resourcequota-controller",
                      retry=self._failed)

    def quota_seen(self, namespace: str) -> None:
        self._namespaces.add(namespace)
        if self._counting is None:
            self._counting = asyncio.get_running_loop().create_task(
                self._count(), name="capstan-resourcequota-counted-informers")

    async def _count(self) -> None:
        """Follow the counted kinds; on failure the next quota event (at the latest the resync) tries again."""
        try:
            await self._counted.start()
        except Exception:
            log.exception("resourcequota: following the kinds quotas count failed")
            self._counting = None

    def queue(self, namespace: str) -> None:
        if namespace in self._namespaces:
            self._worker.queue.add(namespace)

    async def start(self) -> None:
        """Returns once the quotas that exist now have their status."""
        if self._worker.queue.shutting_down():
            self._worker = self._new_worker()
        await self._subscriptions.start()
        if self._counting is not None:  # quotas exist: their namespaces are synced from the counted kinds' lists
            await asyncio.shield(self._counting)
        await self._worker.drain()
        self._worker.start()

    async def stop(self) -> None:
        await self._subscriptions.stop()
        await cancel_all((self._counting,))
        self._counting = None
        await self._counted.stop()
        await self._worker.stop()

    def running(self) -> bool:
        counted = self._counting is None or not self._counting.done() or self._counted.running()
        return self._worker.running() and self._subscriptions.running() and counted

    def _failed(self, namespace: str, err: Exception) -> bool:
        if isinstance(err, errors.ApiError):
            if err.status.code == 404:
                return False
            log.info("resourcequota: syncing namespace %s: %s", namespace, err.status.message)
        else:
            log.error("resourcequota: syncing namespace %s failed", namespace, exc_info=err)
        return True

    async def _sync(self, namespace: str) -> None:
        quotas = await self._list("", "v1", "resourcequotas", namespace)
        if not quotas:
            self._namespaces.discard(namespace)
            return
        listed: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for quota in quotas:
            hard = (quota.get("spec") or {}).get("hard") or {}
            used = await self._usage(namespace, quota, hard, listed)
            status = {"hard": dict(sorted(hard.items())), "used": dump(used)}
            if quota.get("status") == status:
                continue
            body = {**quota, "apiVersion": "v1", "kind": "ResourceQuota", "status": status}
            request = core_pb2.UpdateRequest(
                path=core_pb2.ResourcePath(version="v1", resource="resourcequotas", namespace=namespace,
                                           name=quota["metadata"]["name"], subresource="status"),
                object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(body)))
            request.options.fieldManager = MANAGER
            await self._core.update(request)

    async def _usage(self, namespace: str, quota: dict[str, Any], hard: dict[str, Any],
                     listed: dict[tuple[str, str], list[dict[str, Any]]]) -> ResourceList:
        """quota.CalculateUsage: the previous status.used, with what each evaluator tracking a hard name
        measures now over the namespace's objects the quota's scopes select, masked to the hard names."""
        used = parse((quota.get("status") or {}).get("used"))
        scopes = scope_selectors(quota)
        for ev in self._evaluators(hard):
            matched = ev.matching(list(hard))
            total: ResourceList = {name: zero() for name in matched}
            key = (ev.group, ev.resource)
            if key not in listed:
                listed[key] = await self._objects(ev, namespace)
            for obj in listed[key]:
                if all(ev.scope(s, obj) for s in scopes):
                    total = add(total, mask(ev.usage(obj), matched))
            used.update(total)
        return mask(used, hard)

    def _evaluators(self, hard: dict[str, Any]) -> list[Evaluator]:
        found = [ev for ev in EVALUATORS.values() if ev.matching(list(hard))]
        for name in hard:
            target = counted(name)
            if target is not None:
                found.append(evaluator(*target))
        return found

    async def _objects(self, ev: Evaluator, namespace: str) -> list[dict[str, Any]]:
        served = [r for r in self._core.registry.by_group_resource(ev.group, ev.resource) if r.namespaced]
        if not served:
            return []
        objs = await self._list(ev.group, served[0].version, ev.resource, namespace)
        if ev.resource == "pods" and not ev.group:
            self._requeue_at_expiry(namespace, objs)
        return objs

    def _requeue_at_expiry(self, namespace: str, pods: list[dict[str, Any]]) -> None:
        """A terminating Pod stops being charged when its grace period ends, without an event of its own."""
        now = datetime.datetime.now(datetime.UTC)
        for pod in pods:
            expiry = deletion_expiry(pod)
            if expiry is not None and expiry >= now:
                self._worker.queue.add_after(namespace, (expiry - now).total_seconds() + 0.05)

    async def _list(self, group: str, version: str, resource: str, namespace: str) -> list[dict[str, Any]]:
        listed = await self._core.list(core_pb2.ListRequest(path=core_pb2.ResourcePath(
            group=group, version=version, resource=resource, namespace=namespace)))
        return [orjson.loads(item) for item in listed.items]


def _path(resource: str) -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(version="v1", resource=resource)
