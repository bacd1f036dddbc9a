"""EndpointSlices mirrored from custom Endpoints, as kube-controller-manager's endpointslicemirroring
controller writes them (pkg/controller/endpointslicemirroring): an Endpoints whose Service exists and has no
selector (its Endpoints are the user's) gets slices named `<endpoints>-<random>` (generateName), labelled as the
Endpoints is plus kubernetes.io/service-name and endpointslice.kubernetes.io/managed-by:
endpointslicemirroring-controller.k8s.io, annotated as it is (but last-change-trigger-time and
last-applied-configuration), owned by the Endpoints (a controller reference):

    Endpoints  subsets [{addresses [{ip: 10.1.2.3, targetRef …}], notReadyAddresses [{ip: 10.1.2.4}],
                         ports [{name: http, port: 80}]}]
    slice      addressType IPv4, endpoints [{addresses [10.1.2.3], conditions {ready: true}, targetRef …},
                                            {addresses [10.1.2.4], conditions {ready: false}}],
               ports [{name: http, protocol: TCP, port: 80}]

Subsets with the same ports share slices; IPv4 and IPv6 addresses go to slices of their own type, an address
that is no IP is skipped; a slice holds at most 1000 endpoints. Nothing is mirrored (and mirrored slices are
deleted) when the Endpoints is labelled endpointslice.kubernetes.io/skip-mirror=true, is a leader-election
record, or its Service has a selector (the endpointslice controller writes that Service's slices) or is gone;
an Endpoints deleted takes its slices with it.

A singleton: one per cluster, run by the elected core (server/runtime/election.py) as
kube-controller-manager runs it under leader election; it follows Endpoints, Services and EndpointSlices by
informer and syncs within a moment of a change.
"""

from __future__ import annotations

import orjson

from server.controllers import endpointutil as util
from server.controllers.endpoints import LEADER_ANNOTATION
from server.controllers.endpointslices import managed_slices, slice_path
from server.controllers.endpointutil import Key, Obj
from server.kinds.discovery import MANAGED_BY_LABEL, SERVICE_NAME_LABEL
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

# Endpoints carrying this label are not mirrored (the `kubernetes` Service's own Endpoints carry it).
SKIP_MIRROR_LABEL = "endpointslice.kubernetes.io/skip-mirror"
CONTROLLER_NAME = "endpointslicemirroring-controller.k8s.io"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_ENDPOINTS_PER_SLICE = 1000


class EndpointSliceMirroringController(util.KeyedController):
    name = "endpointslicemirroring-controller"

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        super().__init__(core, informers)
        self.endpoints = self.follow(util.path("endpoints", ""), self._changed)
        self.services = self.follow(util.path("services", ""), self._changed)
        self.slices = self.follow(slice_path(""), self._slice_changed)

    def _changed(self, old: Obj | None, new: Obj | None) -> None:
        self.queue(util.key_of(new or old or {}))

    def _slice_changed(self, old: Obj | None, new: Obj | None) -> None:
        labels = util.labels_of(new or old)
        if labels.get(MANAGED_BY_LABEL) == CONTROLLER_NAME and labels.get(SERVICE_NAME_LABEL):
            self.queue((util.key_of(new or old or {})[0], labels[SERVICE_NAME_LABEL]))

    async def sync(self, key: Key) -> None:
        namespace, name = key
        existing = managed_slices(self.slices, namespace, name, CONTROLLER_NAME)
        service = self.services.get(key)
        if service is None:
            return  # the Service's creation syncs again
        endpoints = self.endpoints.get(key)
        if (service.get("spec") or {}).get("selector") or endpoints is None or not _mirrored(endpoints):
            for slice_ in existing:
                await self.delete(slice_path(namespace), util.key_of(slice_)[1])
            return
        unused = list(existing)
        for family, ports, chunk in _desired(endpoints):
            reuse = next((s for s in unused if s.get("addressType") == family and (s.get("ports") or []) == ports),
                         None)
            if reuse is not None:
                unused.remove(reuse)
            await self._write(endpoints, family, ports, chunk, reuse)
        for slice_ in unused:
            await self.delete(slice_path(namespace), util.key_of(slice_)[1])

    async def _write(self, endpoints: Obj, family: str, ports: list[Obj], chunk: list[Obj],
                     current: Obj | None) -> None:
        namespace, name = util.key_of(endpoints)
        source = endpoints.get("metadata") or {}
        labels = {**(source.get("labels") or {}), SERVICE_NAME_LABEL: name, MANAGED_BY_LABEL: CONTROLLER_NAME}
        annotations = {k: v for k, v in (source.get("annotations") or {}).items()
                       if k not in (util.TRIGGER_TIME, LAST_APPLIED)}
        if current is not None and ((current.get("endpoints") or []) == chunk
                                    and util.labels_of(current) == labels
                                    and ((current.get("metadata") or {}).get("annotations") or {}) == annotations):
            return
        metadata = dict((current or {}).get("metadata") or {
            "generateName": f"{name}-", "namespace": namespace,
            "ownerReferences": [util.controller_ref("Endpoints", endpoints)]})
        metadata["labels"] = labels
        metadata.pop("annotations", None)
        if annotations:
            metadata["annotations"] = annotations
        body: Obj = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": metadata,
                     "addressType": family, "endpoints": chunk}
        if ports:
            body["ports"] = ports
        if current is None:
            await self.create(slice_path(namespace), body)
        else:
            await self.update(slice_path(namespace), body)


def _mirrored(endpoints: Obj) -> bool:
    """shouldMirror: not labelled skip-mirror, not a leader-election record."""
    metadata = endpoints.get("metadata") or {}
    return ((metadata.get("labels") or {}).get(SKIP_MIRROR_LABEL) != "true"
            and LEADER_ANNOTATION not in (metadata.get("annotations") or {}))


def _desired(endpoints: Obj) -> list[tuple[str, list[Obj], list[Obj]]]:
    """(addressType, ports, endpoints) for each slice to write: subsets with equal ports merged, an address
    listed once, at most MAX_ENDPOINTS_PER_SLICE a slice."""
    groups: dict[tuple[str, str], tuple[list[Obj], dict[str, Obj]]] = {}
    for subset in endpoints.get("subsets") or []:
        ports = [_port(p) for p in subset.get("ports") or []]
        for field, ready in (("addresses", True), ("notReadyAddresses", False)):
            for address in subset.get(field) or []:
                family = util.family(str(address.get("ip", "")))
                if not family:
                    continue
                group = groups.setdefault((family, orjson.dumps(ports).decode()), (ports, {}))
                group[1].setdefault(address["ip"], _endpoint(address, ready))
    out: list[tuple[str, list[Obj], list[Obj]]] = []
    for (family, _), (ports, by_ip) in sorted(groups.items()):
        listed = list(by_ip.values())
        for i in range(0, len(listed), MAX_ENDPOINTS_PER_SLICE):
            out.append((family, ports, listed[i:i + MAX_ENDPOINTS_PER_SLICE]))
    return out


def _endpoint(address: Obj, ready: bool) -> Obj:
    """addressToEndpoint."""
    endpoint: Obj = {"addresses": [address["ip"]], "conditions": {"ready": ready}}
    if address.get("hostname"):
        endpoint["hostname"] = address["hostname"]
    if address.get("targetRef"):
        endpoint["targetRef"] = address["targetRef"]
    if address.get("nodeName"):
        endpoint["nodeName"] = address["nodeName"]
    return endpoint


def _port(port: Obj) -> Obj:
    out: Obj = {"name": port.get("name") or "", "protocol": port.get("protocol") or "TCP", "port": port.get("port")}
    if port.get("appProtocol"):
        out["appProtocol"] = port["appProtocol"]
    return out


def singletons(core: Core, informers: SharedInformers | None = None) -> list[Singleton]:
    controller = EndpointSliceMirroringController(core, informers)
    return [Singleton("EndpointSliceMirroringController", controller.start, controller.stop)]
