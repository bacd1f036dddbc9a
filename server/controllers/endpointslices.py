"""EndpointSlices for Services with selectors, as kube-controller-manager's endpointslice controller writes
them (pkg/controller/endpointslice): for each of the Service's ipFamilies, slices of addressType IPv4/IPv6
named `<service>-<random>` (generateName), labelled kubernetes.io/service-name and
endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io (plus the Service's own labels and
service.kubernetes.io/headless for a headless one), owned by the Service (a controller reference, so the
garbage collector removes them with it):

    endpoints  one per selected Pod with an IP of the slice's family that is not terminal: addresses,
               conditions {ready: Ready and not terminating (always, under publishNotReadyAddresses),
               serving: Ready, terminating: being deleted}, hostname (a headless Service's subdomain Pods),
               targetRef {kind: Pod, namespace, name, uid}, nodeName when scheduled
    ports      the Service ports resolved against the Pod (server/controllers/endpointutil.py), name "" for an
               unnamed one; Pods resolving to different ports go to different slices

A Service with no such Pod keeps one placeholder slice without endpoints or ports. A slice holds at most 100
endpoints; existing slices with the same ports are reused, the rest deleted. Endpoints are ordered by address
(kube keeps the order slices had). The endpoints.kubernetes.io/last-change-trigger-time annotation carries the
earliest unsynced change. Topology (zones from Nodes, hints) is not filled. Only slices managed by this
controller are touched; Services without a selector or of type ExternalName are left alone.

A singleton: one per cluster, run by the elected core (server/runtime/election.py) as
kube-controller-manager runs it under leader election; it follows Services, Pods and EndpointSlices by informer
and syncs within a moment of a change.
"""

from __future__ import annotations

from typing import Any

import orjson

from server.controllers import endpointutil as util
from server.controllers.endpointutil import Key, Obj
from server.kinds.discovery import MANAGED_BY_LABEL, SERVICE_NAME_LABEL
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import Indexer, SharedInformers

CONTROLLER_NAME = "endpointslice-controller.k8s.io"
GROUP = "discovery.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100


def slice_path(namespace: str) -> Any:
    return util.path("endpointslices", namespace, group=GROUP)


def managed_slices(cache: Indexer[Obj], namespace: str, service: str, manager: str) -> list[Obj]:
    """The slices of one Service that `manager` wrote, by name."""
    wanted = {SERVICE_NAME_LABEL: service, MANAGED_BY_LABEL: manager}
    found = [s for s in cache.in_namespace(namespace) if util.selects(wanted, util.labels_of(s))]
    return sorted(found, key=lambda s: util.key_of(s)[1])


def slice_labels(service: Obj) -> dict[str, str]:
    """setEndpointSliceLabels: the Service's labels but the reserved ones, the headless label, then the
    reserved ones."""
    labels = {k: v for k, v in util.labels_of(service).items() if k not in (SERVICE_NAME_LABEL, MANAGED_BY_LABEL)}
    spec = service.get("spec") or {}
    if util.is_headless(service) or not spec.get("clusterIP"):
        labels[util.HEADLESS_LABEL] = ""
    else:
        labels.pop(util.HEADLESS_LABEL, None)
    labels[SERVICE_NAME_LABEL] = util.key_of(service)[1]
    labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
    return labels


class EndpointSliceController(util.ServiceEndpointsController):
    name = "endpointslice-controller"

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        super().__init__(core, informers)
        self.slices = self.follow(slice_path(""), self._slice_changed)
        self._triggers = util.TriggerTimes()

    def _slice_changed(self, old: Obj | None, new: Obj | None) -> None:
        """A managed slice changed or deleted by anyone: its Service is synced again (a no-op for our own)."""
        labels = util.labels_of(new or old)
        if labels.get(MANAGED_BY_LABEL) == CONTROLLER_NAME and labels.get(SERVICE_NAME_LABEL):
            self.queue((util.key_of(new or old or {})[0], labels[SERVICE_NAME_LABEL]))

    async def sync(self, key: Key) -> None:
        namespace, name = key
        service = self.services.get(key)
        if service is None:
            self._triggers.forget(key)  # its slices go with it (owner references)
            return
        wanted = util.selector(service)
        if wanted is None:
            return
        pods = [p for p in self.pods.in_namespace(namespace) if util.selects(wanted, util.labels_of(p))]
        trigger = self._triggers.compute(service, pods)
        existing = managed_slices(self.slices, namespace, name, CONTROLLER_NAME)
        families = util.ip_families(service)
        for slice_ in existing:
            if slice_.get("addressType") not in families:
                await self.delete(slice_path(namespace), util.key_of(slice_)[1])
        for family in families:
            desired = _desired(service, pods, family)
            mine = [s for s in existing if s.get("addressType") == family]
            await self._reconcile(service, family, desired, mine, trigger)

    async def _reconcile(self, service: Obj, family: str, desired: list[tuple[list[Obj], list[Obj]]],
                         existing: list[Obj], trigger: str) -> None:
        """Fill slices with `desired` (ports, endpoints) chunks, reusing existing slices of the same ports."""
        namespace = util.key_of(service)[0]
        if not desired:
            desired = [([], [])]  # the placeholder
        unused = list(existing)
        for ports, endpoints in desired:
            chunks = [endpoints[i:i + MAX_ENDPOINTS_PER_SLICE]
                      for i in range(0, len(endpoints), MAX_ENDPOINTS_PER_SLICE)] or [[]]
            for chunk in chunks:
                reuse = next((s for s in unused if (s.get("ports") or []) == ports), None)
                if reuse is not None:
                    unused.remove(reuse)
                await self._write(service, family, ports, chunk, reuse, trigger)
        for slice_ in unused:
            await self.delete(slice_path(namespace), util.key_of(slice_)[1])

    async def _write(self, service: Obj, family: str, ports: list[Obj], endpoints: list[Obj], current: Obj | None,
                     trigger: str) -> None:
        labels = slice_labels(service)
        namespace, name = util.key_of(service)
        if current is not None and ((current.get("endpoints") or []) == endpoints
                                    and util.labels_of(current) == labels):
            return
        metadata = dict((current or {}).get("metadata") or {
            "generateName": f"{name}-", "namespace": namespace,
            "ownerReferences": [util.controller_ref("Service", service)]})
        annotations = dict(metadata.get("annotations") or {})
        annotations.pop(util.TRIGGER_TIME, None)
        if trigger:
            annotations[util.TRIGGER_TIME] = trigger
        metadata["labels"] = labels
        metadata["annotations"] = annotations
        if not annotations:
            del metadata["annotations"]
        body: Obj = {"apiVersion": f"{GROUP}/v1", "kind": "EndpointSlice", "metadata": metadata,
                     "addressType": family, "endpoints": endpoints}
        if ports:
            body["ports"] = ports
        if current is None:
            await self.create(slice_path(namespace), body)
        else:
            await self.update(slice_path(namespace), body)


def _desired(service: Obj, pods: list[Obj], family: str) -> list[tuple[list[Obj], list[Obj]]]:
    """The endpoints of one address type grouped by the ports they serve, each group ordered by address."""
    groups: dict[str, tuple[list[Obj], list[Obj]]] = {}
    for pod in pods:
        if not util.counts(pod, include_terminating=True):
            continue
        endpoint = _endpoint(service, pod, family)
        if endpoint is None:
            continue
        ports = _ports(service, pod)
        groups.setdefault(orjson.dumps(ports).decode(), (ports, []))[1].append(endpoint)
    for _, endpoints in groups.values():
        endpoints.sort(key=lambda e: (e["addresses"], e["targetRef"]["name"]))
    return [groups[k] for k in sorted(groups)]


def _endpoint(service: Obj, pod: Obj, family: str) -> Obj | None:
    """podToEndpoint."""
    addresses = [ip for ip in util.pod_ips(pod) if util.family(ip) == family]
    if not addresses:
        return None
    serving = util.is_ready(pod)
    terminating = util.terminating(pod)
    ready = bool((service.get("spec") or {}).get("publishNotReadyAddresses")) or (serving and not terminating)
    endpoint: Obj = {"addresses": addresses,
                     "conditions": {"ready": ready, "serving": serving, "terminating": terminating}}
    if util.sets_hostname(pod, service):
        endpoint["hostname"] = pod["spec"]["hostname"]
    endpoint["targetRef"] = util.target_ref(pod)
    if (pod.get("spec") or {}).get("nodeName"):
        endpoint["nodeName"] = pod["spec"]["nodeName"]
    return endpoint


def _ports(service: Obj, pod: Obj) -> list[Obj]:
    """getEndpointPorts: every Service port the Pod resolves, in the Service's order."""
    out: list[Obj] = []
    for port in (service.get("spec") or {}).get("ports") or []:
        number = util.find_port(pod, port)
        if number is None:
            continue
        endpoint_port: Obj = {"name": port.get("name") or "", "protocol": port.get("protocol") or "TCP",
                              "port": number}
        if port.get("appProtocol"):
            endpoint_port["appProtocol"] = port["appProtocol"]
        out.append(endpoint_port)
    return out


def singletons(core: Core, informers: SharedInformers | None = None) -> list[Singleton]:
    controller = EndpointSliceController(core, informers)
    return [Singleton("EndpointSliceController", controller.start, controller.stop)]
