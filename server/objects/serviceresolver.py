"""A Service resolved to one of its ready endpoints, as kube-apiserver resolves it with
--enable-aggregator-routing (k8s.io/apiserver/pkg/util/proxy ResolveEndpoint): the aggregator dials the
endpoint's IP directly, never the ClusterIP, so a Service with a selectorless Endpoints pointing at a process
outside the cluster works.

- the Service must exist and be of type ClusterIP, NodePort or LoadBalancer;
- its port numbered `port` names the endpoint port (by name; "" for an unnamed one);
- an Endpoints subset with a ready address and a port of that name gives the endpoint (an address chosen at
  random among the subset's ready ones, as kube chooses). Without an Endpoints object, the EndpointSlices
  labelled kubernetes.io/service-name are read the same way (ready endpoints only).

Each failure is an `Unresolved` carrying the reason and message kube's APIService availability controller writes
for it (ServiceNotFound, ServicePortError, EndpointsNotFound, MissingEndpoints), so the proxy (503) and the
controller (the Available condition) say the same thing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import orjson

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.machinery.values import Obj
from server.objects.core import Core

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
_RESOLVABLE_TYPES = frozenset({"", "ClusterIP", "NodePort", "LoadBalancer"})


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int


class Unresolved(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


async def _read(core: Core, group: str, resource: str, namespace: str, name: str) -> Obj | None:
    path = core_pb2.ResourcePath(group=group, version="v1", resource=resource, namespace=namespace, name=name)
    try:
        got = await core.get(core_pb2.GetRequest(path=path))
    except errors.ApiError as err:
        if err.code == 404:
            return None
        raise
    obj: Obj = orjson.loads(got.object.data)
    return obj


async def _slices(core: Core, namespace: str, name: str) -> list[Obj]:
    path = core_pb2.ResourcePath(group="discovery.k8s.io", version="v1", resource="endpointslices",
                                 namespace=namespace)
    listed = await core.list(core_pb2.ListRequest(
        path=path, options=meta_pb2.ListOptions(labelSelector=f"{SERVICE_NAME_LABEL}={name}")))
    return [orjson.loads(item) for item in listed.items]


def from_endpoints(service: Obj | None, endpoints: Obj | None, namespace: str, name: str, port: int) -> Endpoint:
    """The endpoint as read from the Service and its Endpoints (Unresolved when there is none); LookupError when
    the Service has no Endpoints object, for the caller to read its EndpointSlices."""
    port_name = _port_name(service, namespace, name, port)
    if endpoints is None:
        raise LookupError(name)
    for subset in endpoints.get("subsets") or []:
        addresses = [a for a in subset.get("addresses") or [] if isinstance(a, dict) and a.get("ip")]
        if not addresses:
            continue
        for endpoint_port in subset.get("ports") or []:
            if str(endpoint_port.get("name") or "") == port_name:
                return Endpoint(str(random.choice(addresses)["ip"]), int(endpoint_port.get("port") or 0))
    raise _missing(namespace, name, port_name)


def from_slices(service: Obj | None, slices: list[Obj], namespace: str, name: str, port: int) -> Endpoint:
    port_name = _port_name(service, namespace, name, port)
    if not slices:
        raise Unresolved("EndpointsNotFound", f'cannot find endpoints for service/{name} in "{namespace}"')
    for endpoint_slice in slices:
        ready = [str(e["addresses"][0]) for e in endpoint_slice.get("endpoints") or []
                 if isinstance(e, dict) and e.get("addresses")
                 and (e.get("conditions") or {}).get("ready", True) is not False]
        for slice_port in endpoint_slice.get("ports") or []:
            if ready and str(slice_port.get("name") or "") == port_name and slice_port.get("port"):
                return Endpoint(random.choice(ready), int(slice_port["port"]))
    raise _missing(namespace, name, port_name)


def _port_name(service: Obj | None, namespace: str, name: str, port: int) -> str:
    if service is None:
        raise Unresolved("ServiceNotFound", f'service/{name} in "{namespace}" is not present')
    spec = service.get("spec") or {}
    if spec.get("type", "") not in _RESOLVABLE_TYPES:
        raise Unresolved("ServiceAccessError", f'unsupported service type "{spec.get("type")}"')
    port_name = next((str(p.get("name") or "") for p in spec.get("ports") or []
                      if isinstance(p, dict) and p.get("port") == port), None)
    if port_name is None:
        raise Unresolved("ServicePortError", f'service/{name} in "{namespace}" is not listening on port {port}')
    return port_name


def _missing(namespace: str, name: str, port_name: str) -> Unresolved:
    return Unresolved("MissingEndpoints",
                      f'endpoints for service/{name} in "{namespace}" have no addresses with port name "{port_name}"')


async def resolve(core: Core, namespace: str, name: str, port: int, *, service: Obj | None = None,
                  endpoints: Obj | None = None, cached: bool = False) -> Endpoint:
    """One ready endpoint of Service namespace/name's port `port` (Unresolved when there is none). With `cached`,
    `service` and `endpoints` are what an informer holds (None: absent) and only EndpointSlices are read."""
    if not cached:
        service = await _read(core, "", "services", namespace, name)
        endpoints = await _read(core, "", "endpoints", namespace, name) if service is not None else None
    try:
        return from_endpoints(service, endpoints, namespace, name, port)
    except LookupError:
        return from_slices(service, await _slices(core, namespace, name), namespace, name, port)
