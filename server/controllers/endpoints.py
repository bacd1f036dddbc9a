"""Endpoints for Services with selectors, as kube-controller-manager's endpoint controller writes them
(pkg/controller/endpoint): an Endpoints object of the Service's name, labelled as the Service is (plus
service.kubernetes.io/headless for a headless one), whose subsets list the selected Pods' addresses:

    addresses          Pods whose Ready condition is True (every counted Pod when publishNotReadyAddresses)
    notReadyAddresses  the others that have an IP and are neither terminal nor terminating
    address            {ip (of the Service's first IP family), hostname (a headless Service's subdomain Pods),
                        nodeName (when scheduled), targetRef {kind: Pod, namespace, name, uid}}
    ports              each Service port resolved against the Pod (server/controllers/endpointutil.py);
                       a headless Service without ports lists addresses only

Subsets are repacked as kube's RepackSubsets does: addresses offering the same ports (with the same readiness)
share one subset. Addresses are ordered by IP then uid; kube orders ports and subsets by a hash of their
contents, here by port name, number and protocol and by first address. The endpoints.kubernetes.io/
last-change-trigger-time annotation carries the earliest unsynced change; over-capacity truncation (more than
1000 addresses) is not done. An Endpoints whose Service is deleted is deleted, and at start every Endpoints
without a Service is (checkLeftoverEndpoints; leader-election records excepted). Services without a selector
or of type ExternalName are left alone.

A singleton: one per cluster, run by the elected core (server/runtime/election.py) as
kube-controller-manager runs it under leader election; it follows Services, Pods and Endpoints by informer
and syncs within a moment of a change.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import orjson

from server.controllers import endpointutil as util
from server.controllers.endpointutil import Key, Obj
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
ENDPOINTS = util.path("endpoints", "")


class EndpointsController(util.ServiceEndpointsController):
    name = "endpoint-controller"

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        super().__init__(core, informers)
        self.endpoints = self.follow(ENDPOINTS, self._endpoints_changed)
        self._triggers = util.TriggerTimes()
        self._started = False

    def started(self) -> None:
        """checkLeftoverEndpoints: every Endpoints is looked at once, so one without a Service is deleted."""
        self._started = True
        for key, endpoints in self.endpoints.items():
            if LEADER_ANNOTATION not in ((endpoints.get("metadata") or {}).get("annotations") or {}):
                self.queue(key)

    def _endpoints_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is None and old is not None and self._started:
            self.queue(util.key_of(old))  # recreated if its Service still selects

    async def sync(self, key: Key) -> None:
        namespace, name = key
        service = self.services.get(key)
        if service is None:
            await self.delete(util.path("endpoints", namespace), name)
            self._triggers.forget(key)
            return
        wanted = util.selector(service)
        if wanted is None:
            return
        pods = [p for p in self.pods.in_namespace(namespace) if util.selects(wanted, util.labels_of(p))]
        trigger = self._triggers.compute(service, pods)
        subsets = repack(list(_subsets(service, pods)))
        labels = util.labels_of(service)
        current = self.endpoints.get(key)
        if current is not None:
            compared = {k: v for k, v in util.labels_of(current).items() if k != util.HEADLESS_LABEL}
            if (current.get("subsets") or []) == subsets and compared == labels:
                return
        if util.is_headless(service) or not (service.get("spec") or {}).get("clusterIP"):
            labels[util.HEADLESS_LABEL] = ""
        body: Obj = {"apiVersion": "v1", "kind": "Endpoints"}
        metadata = dict((current or {}).get("metadata") or {"name": name, "namespace": namespace})
        annotations = dict(metadata.get("annotations") or {})
        annotations.pop(util.TRIGGER_TIME, None)
        if trigger:
            annotations[util.TRIGGER_TIME] = trigger
        metadata["labels"] = labels
        metadata["annotations"] = annotations
        body["metadata"] = {k: v for k, v in metadata.items() if v or k not in ("labels", "annotations")}
        if subsets:
            body["subsets"] = subsets
        if current is None:
            await self.create(util.path("endpoints", namespace), body)
        else:
            await self.update(util.path("endpoints", namespace), body)


def _subsets(service: Obj, pods: list[Obj]) -> Any:
    """One single-address subset per (Pod, port), as the endpoint controller builds them before repacking."""
    spec = service.get("spec") or {}
    tolerate = bool(spec.get("publishNotReadyAddresses"))
    wanted_family = util.ip_families(service)[0]
    for pod in pods:
        if not util.counts(pod, include_terminating=tolerate):
            continue
        ip = next((ip for ip in util.pod_ips(pod) if util.family(ip) == wanted_family), None)
        if ip is None:
            continue
        address: Obj = {"ip": ip}
        if util.sets_hostname(pod, service):
            address["hostname"] = pod["spec"]["hostname"]
        if (pod.get("spec") or {}).get("nodeName"):
            address["nodeName"] = pod["spec"]["nodeName"]
        address["targetRef"] = util.target_ref(pod)
        ready = tolerate or util.is_ready(pod)
        ports = spec.get("ports") or []
        if not ports:
            if util.is_headless(service):
                yield address, ready, None
            continue
        for port in ports:
            number = util.find_port(pod, port)
            if number is None:
                continue
            endpoint_port: Obj = {"name": port.get("name")} if port.get("name") else {}
            endpoint_port.update(port=number, protocol=port.get("protocol") or "TCP")
            if port.get("appProtocol"):
                endpoint_port["appProtocol"] = port["appProtocol"]
            yield address, ready, endpoint_port


def repack(entries: list[tuple[Obj, bool, Obj | None]]) -> list[Obj]:
    """RepackSubsets: each port mapped to its addresses (readiness included), then ports grouped by equal
    address sets; a portless entry keeps its addresses under no port."""
    by_port: dict[str, dict[str, tuple[Obj, bool]]] = {}
    ports: dict[str, Obj | None] = {}
    for address, ready, port in entries:
        port_key = _key(port)
        ports[port_key] = port
        by_port.setdefault(port_key, {})[_key(address)] = (address, ready)
    groups: dict[str, tuple[dict[str, tuple[Obj, bool]], list[Obj]]] = {}
    for port_key, addresses in by_port.items():
        group = _key(sorted((k, ready) for k, (_, ready) in addresses.items()))
        _, group_ports = groups.setdefault(group, (addresses, []))
        port = ports[port_key]
        if port is not None:
            group_ports.append(port)
    subsets: list[Obj] = []
    for addresses, group_ports in groups.values():
        subset: Obj = {}
        listed = sorted(addresses.values(), key=lambda entry: _address_order(entry[0]))
        for field, readiness in (("addresses", True), ("notReadyAddresses", False)):
            chosen = [address for address, ready in listed if ready is readiness]
            if chosen:
                subset[field] = chosen
        if group_ports:
            subset["ports"] = sorted(group_ports, key=lambda p: (p.get("name", ""), p["port"], p["protocol"]))
        subsets.append(subset)
    return sorted(subsets, key=lambda s: _address_order([*s.get("addresses", []), *s.get("notReadyAddresses", [])][0]))


def _key(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _address_order(address: Obj) -> tuple[int, int, str]:
    ip = ipaddress.ip_address(address["ip"])
    return ip.version, int(ip), str((address.get("targetRef") or {}).get("uid", ""))


def singletons(core: Core, informers: SharedInformers | None = None) -> list[Singleton]:
    controller = EndpointsController(core, informers)
    return [Singleton("EndpointsController", controller.start, controller.stop)]
