"""What the endpoints, EndpointSlice and mirroring controllers share (kube's pkg/controller/util/endpoint and
endpointslice/util): which Pods a Service selects and which of them count, a Service port resolved against a
Pod's container ports, the last-change trigger time, and the controller shape each runs on (shared informers
queueing keys for one worker).

Contracts, as kube's:
- a Service with no selector (absent or empty: stored selectors are never an empty map) or of type
  ExternalName gets nothing from the controllers; its Endpoints are the user's;
- a Pod counts when it is not terminal (Failed, or Succeeded), has an IP, and (unless terminating Pods are
  included) is not being deleted; it is ready when its Ready condition is True;
- a named targetPort is the first container port of that name and the Service port's protocol; a Pod without
  it is left out of that port;
- the trigger time is the earliest change not yet synced: a Pod's Ready lastTransitionTime that moved, or the
  Service's creationTimestamp the first time it is seen; none (the annotation removed) when nothing moved.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Iterable
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
TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
HEADLESS_LABEL = "service.kubernetes.io/headless"
RETRY = 0.5  # seconds before a key whose sync failed is synced again


def key_of(obj: Obj) -> Key:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace", "")), str(metadata.get("name", ""))


def labels_of(obj: Obj | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def selector(service: Obj) -> dict[str, str] | None:
    """The Service's selector when the controllers act on it, else None (no selector, or ExternalName)."""
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return None
    return dict(spec.get("selector") or {}) or None


def selects(wanted: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in wanted.items())


def is_headless(service: Obj) -> bool:
    return (service.get("spec") or {}).get("clusterIP") == "None"


def is_ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions if isinstance(c, dict))


def terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_ips(pod: Obj) -> list[str]:
    status = pod.get("status") or {}
    ips = [str(p.get("ip")) for p in status.get("podIPs") or [] if isinstance(p, dict) and p.get("ip")]
    if not ips and status.get("podIP"):
        ips = [str(status["podIP"])]
    return ips


def family(ip: str) -> str:
    try:
        return "IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"
    except ValueError:
        return ""


def counts(pod: Obj, *, include_terminating: bool) -> bool:
    """ShouldPodBeInEndpoints."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Failed", "Succeeded"):
        return False
    if not pod_ips(pod):
        return False
    return include_terminating or not terminating(pod)


def ip_families(service: Obj) -> list[str]:
    spec = service.get("spec") or {}
    families = [str(f) for f in spec.get("ipFamilies") or []]
    if families:
        return families
    cluster_ip = str(spec.get("clusterIP") or "")
    return [family(cluster_ip) or "IPv4"] if cluster_ip and cluster_ip != "None" else ["IPv4"]


def find_port(pod: Obj, port: Obj) -> int | None:
    """podutil.FindPort: a numeric targetPort as is (the port itself when unset), a named one from the Pod's
    containers (the first container port of that name and protocol), None when the Pod has none."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    protocol = port.get("protocol") or "TCP"
    for container in (pod.get("spec") or {}).get("containers") or []:
        for container_port in container.get("ports") or []:
            if container_port.get("name") == target and (container_port.get("protocol") or "TCP") == protocol:
                return int(container_port["containerPort"])
    return None


def sets_hostname(pod: Obj, service: Obj) -> bool:
    spec = pod.get("spec") or {}
    return (bool(spec.get("hostname")) and spec.get("subdomain") == key_of(service)[1]
            and key_of(pod)[0] == key_of(service)[0])


def target_ref(pod: Obj) -> Obj:
    metadata = pod.get("metadata") or {}
    return {"kind": "Pod", "namespace": metadata.get("namespace"), "name": metadata.get("name"),
            "uid": metadata.get("uid")}


def controller_ref(kind: str, owner: Obj) -> Obj:
    """metav1.NewControllerRef of a core/v1 object."""
    metadata = owner.get("metadata") or {}
    return {"apiVersion": "v1", "kind": kind, "name": metadata.get("name"), "uid": metadata.get("uid"),
            "controller": True, "blockOwnerDeletion": True}


class TriggerTimes:
    """kube's TriggerTimeTracker: per Service, the trigger times seen at its last sync."""

    def __init__(self) -> None:
        self._states: dict[Key, tuple[str, dict[str, str]]] = {}

    def compute(self, service: Obj, pods: Iterable[Obj]) -> str:
        """The earliest change since the last sync of this Service ("" for none), remembered as synced."""
        key = key_of(service)
        last_service, last_pods = self._states.get(key, ("", {}))
        created = str((service.get("metadata") or {}).get("creationTimestamp") or "")
        changed: list[str] = []
        now_pods: dict[str, str] = {}
        for pod in pods:
            ready = next((c for c in (pod.get("status") or {}).get("conditions") or []
                          if isinstance(c, dict) and c.get("type") == "Ready"), None)
            when = str((ready or {}).get("lastTransitionTime") or "")
            if when:
                name = key_of(pod)[1]
                now_pods[name] = when
                if when > last_pods.get(name, ""):
                    changed.append(when)
        if created > last_service:
            changed.append(created)
        self._states[key] = (created, now_pods)
        return min(changed) if changed else ""

    def forget(self, key: Key) -> None:
        self._states.pop(key, None)


class KeyedController:
    """Shared informers (server/runtime/informer.py) whose changes queue keys (namespace, name), and one worker
    syncing the queued keys (server/runtime/worker.py); a key whose sync fails is queued again after RETRY
    seconds. Subclasses say what to watch and how to sync."""

    name = "controller"

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        self.core = core
        self._shared = informers or SharedInformers(core)
        self._subscriptions = Subscriptions()
        self._worker = self._new_worker()

    def _new_worker(self) -> Worker[Key]:
        return Worker(WorkQueue(ExponentialBackoff(RETRY, RETRY)), self.sync, name=f"capstan-{self.name}",
                      retry=self._failed)

    def follow(self, path: core_pb2.ResourcePath, changed: Callable[[Obj | None, Obj | None], None]) -> Indexer[Obj]:
        """The cache of the resource's shared informer; `changed(old, new)` is called on every change while
        this controller runs (None for a side that does not exist)."""
        handlers: Handlers[Obj] = on_change(changed)
        return self._subscriptions.add(self._shared.informer(path), handlers).cache

    def queue(self, key: Key) -> None:
        self._worker.queue.add(key)

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

    async def create(self, path: core_pb2.ResourcePath, obj: Obj) -> None:
        request = core_pb2.CreateRequest(path=path, object=_raw(obj))
        request.options.fieldManager = MANAGER
        await self.core.create(request)

    async def update(self, path: core_pb2.ResourcePath, obj: Obj) -> None:
        request = core_pb2.UpdateRequest(path=_named(path, key_of(obj)[1]), object=_raw(obj))
        request.options.fieldManager = MANAGER
        await self.core.update(request)

    async def delete(self, path: core_pb2.ResourcePath, name: str) -> None:
        """Deleted, or already gone."""
        try:
            await self.core.delete(core_pb2.DeleteRequest(path=_named(path, name)))
        except errors.ApiError as err:
            if err.code != 404:
                raise


def _raw(obj: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))


def _named(path: core_pb2.ResourcePath, name: str) -> core_pb2.ResourcePath:
    named = core_pb2.ResourcePath()
    named.CopyFrom(path)
    named.name = name
    return named


def path(resource: str, namespace: str, *, group: str = "") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group=group, version="v1", resource=resource, namespace=namespace)


class ServiceEndpointsController(KeyedController):
    """A KeyedController keyed by Service that follows Services and the Pods they select (the endpoint and
    endpointslice controllers): a Service's change queues it, a Pod's change queues every Service of its
    namespace whose selector matched the Pod before or after."""

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        super().__init__(core, informers)
        self.services = self.follow(path("services", ""), self._service_changed)
        self.pods = self.follow(path("pods", ""), self._pod_changed)

    def _service_changed(self, old: Obj | None, new: Obj | None) -> None:
        self.queue(key_of(new or old or {}))

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        for service in self.services.in_namespace(key_of(new or old or {})[0]):
            wanted = selector(service)
            if wanted and any(selects(wanted, labels_of(p)) for p in (old, new) if p is not None):
                self.queue(key_of(service))
