"""What the endpoints, EndpointSlice and mirroring controllers share (kube's pkg/controller/util/endpoint and
endpointslice/util): which Pods a Service selects and which of them count, a Service port resolved against a
Pod's container ports, the last-change trigger time, and the Service-keyed controller shape the endpoint controllers
run on (over server/controllers/workload/keyed.py).

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
from collections.abc import Iterable

from server.controllers.workload.keyed import MANAGER, Key, KeyedController, Obj, key_of, path
from server.objects.core import Core
from server.runtime.informer import SharedInformers

__all__ = ["MANAGER", "Key", "KeyedController", "Obj", "key_of", "path"]
TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
HEADLESS_LABEL = "service.kubernetes.io/headless"


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
