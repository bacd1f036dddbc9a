"""Where a request to an aggregated group version goes: the APIService `<version>.<group>` with a `service`,
Available, and a ready endpoint of that Service (server/objects/serviceresolver.py), as kube-aggregator's
proxyHandler decides it.

- no such APIService, or one without a service (Local): 404, the group version is not aggregated;
- Available not True (by this core's own latest check when a Locator knows it, else the stored condition): 503
  `service unavailable`, as the proxy answers without dialing;
- no endpoint to dial: 503 `service unavailable` too (kube logs the resolution error, answers just that).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Protocol

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.machinery.aggregation import service_server_name
from server.machinery.values import Obj
from server.objects import serviceresolver
from server.objects.core import Core

APISERVICES = core_pb2.ResourcePath(group="apiregistration.k8s.io", version="v1", resource="apiservices")
UNAVAILABLE = "service unavailable"
DEFAULT_PORT = 443


@dataclass(frozen=True, slots=True)
class Backend:
    host: str
    port: int
    server_name: str
    ca_bundle: bytes
    insecure_skip_tls_verify: bool


def available(api_service: Obj) -> bool:
    return any(c.get("type") == "Available" and c.get("status") == "True"
               for c in (api_service.get("status") or {}).get("conditions") or [] if isinstance(c, dict))


def service_of(api_service: Obj) -> Obj | None:
    service = (api_service.get("spec") or {}).get("service")
    return service if isinstance(service, dict) and service.get("name") else None


def ca_bundle(api_service: Obj) -> bytes:
    encoded = (api_service.get("spec") or {}).get("caBundle") or ""
    return base64.b64decode(encoded) if encoded else b""


async def read_api_service(core: Core, group: str, version: str) -> Obj | None:
    path = core_pb2.ResourcePath()
    path.CopyFrom(APISERVICES)
    path.name = f"{version}.{group}"
    try:
        got = await core.get(core_pb2.GetRequest(path=path))
    except errors.ApiError as err:
        if err.code == 404:
            return None
        raise
    obj: Obj = orjson.loads(got.object.data)
    return obj


class Locator(Protocol):
    """Where a request to an aggregated group version goes (the rules above)."""

    async def locate(self, group: str, version: str) -> Backend: ...


class StoreLocator:
    """Reads the APIService, the Service and its Endpoints through the core, every call."""

    def __init__(self, core: Core) -> None:
        self._core = core

    async def locate(self, group: str, version: str) -> Backend:
        api_service = await read_api_service(self._core, group, version) if group else None
        return await backend_of(self._core, api_service)


async def backend_of(core: Core, api_service: Obj | None, *, service_obj: Obj | None = None,
                     endpoints: Obj | None = None, cached: bool = False, checked: bool | None = None) -> Backend:
    """The Backend of `api_service` (None: there is none); with `cached`, its Service and Endpoints as an informer
    holds them; `checked`: this core's own latest availability check, which goes before the stored condition."""
    service = service_of(api_service) if api_service is not None else None
    if api_service is None or service is None:
        raise errors.ApiError(errors.status(404, "NotFound", "the server could not find the requested resource"))
    if not (available(api_service) if checked is None else checked):
        raise errors.service_unavailable(UNAVAILABLE)
    namespace, name = str(service.get("namespace") or ""), str(service["name"])
    try:
        endpoint = await serviceresolver.resolve(core, namespace, name, int(service.get("port") or DEFAULT_PORT),
                                                 service=service_obj, endpoints=endpoints, cached=cached)
    except serviceresolver.Unresolved:
        raise errors.service_unavailable(UNAVAILABLE) from None
    spec = api_service.get("spec") or {}
    return Backend(endpoint.host, endpoint.port, service_server_name(name, namespace), ca_bundle(api_service),
                   bool(spec.get("insecureSkipTLSVerify")))
