"""APIServices with a `service`: kube-aggregator's availability controller and its discovery fetch, on the runtime.

Every core follows APIServices, Services and Endpoints (shared informers) and, for each APIService that names a
service, checks it as kube-aggregator's available_controller does (1.28):

1. the Service resolves to a ready endpoint (server/objects/serviceresolver.py; ServiceNotFound, ServicePortError,
   EndpointsNotFound, MissingEndpoints otherwise, with kube's messages);
2. a discovery GET of https://<endpoint>/apis/<group>/<version>, over the aggregator's TLS (caBundle and
   `<service>.<namespace>.svc`, the front-proxy client certificate) as system:kube-aggregator in system:masters,
   answers 2xx within 5 s, else FailedDiscoveryCheck `failing or missing response from <url>: <error>`;
3. all passed: Available True, reason Passed, `all checks passed`.

The answer of step 2 is the backend's APIResourceList; with it the backend's OpenAPI v3 document of the group
version (/openapi/v3/apis/<group>/<version>, as kube's OpenAPI v3 aggregation fetches it). The core's registry
keeps both (`Registry.aggregated`, with the APIService's priorities and availability), so discovery, OpenAPI and
the gateway's routing include the group version; a failed check keeps the last good documents. Each core keeps its
own registry current; only the leading core writes the Available condition (through /status, only when its
status, reason or message change; lastTransitionTime moves when the status does), so the cores never race on it.

An APIService is checked when it, its Service or the Service's Endpoints change, and again every `resync`
seconds (kube's controller resyncs every 30 s), which is also how a backend's changed discovery is seen.

The controller is also the core's Locator (server/objects/aggregated.py): the guard's Proxy method finds the
APIService, Service and Endpoints of a request in its informers' caches and the availability in its own latest
check, so a proxied request reads nothing from the store.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable

import aiohttp
import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors, meta
from server.machinery.aggregation import (
    CHECKER_GROUPS,
    CHECKER_USER,
    ClientContexts,
    ProxyClientCertificate,
    forwarded_headers,
    service_server_name,
)
from server.machinery.values import Obj
from server.objects import aggregated, serviceresolver
from server.objects.core import Core
from server.registry.resources import AggregatedVersion
from server.runtime.informer import Handlers, Informer, SharedInformers, key_of
from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue

log = logging.getLogger(__name__)

APISERVICES = aggregated.APISERVICES
SERVICES = core_pb2.ResourcePath(version="v1", resource="services")
ENDPOINTS = core_pb2.ResourcePath(version="v1", resource="endpoints")
RESYNC = 30.0
CHECK_TIMEOUT = 5.0  # kube's discovery check gives the backend 5 s
PASSED = ("True", "Passed", "all checks passed")


def _condition_of(obj: Obj) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or []
                 if isinstance(c, dict) and c.get("type") == "Available"), None)


class AggregationController:
    def __init__(self, core: Core, informers: SharedInformers, leading: Callable[[], bool], *,
                 client_certificate: ProxyClientCertificate | None = None, resync: float = RESYNC) -> None:
        self._core = core
        self._informers = informers
        self._leading = leading
        self._contexts = ClientContexts(client_certificate)
        self._resync = resync
        self._queue: WorkQueue[str] = WorkQueue(ExponentialBackoff(0.5, 30.0))
        self._worker: Worker[str] | None = None
        self._followed: list[tuple[Informer[Obj], Handlers[Obj]]] = []
        self._group_versions: dict[str, tuple[str, str]] = {}  # APIService name -> its aggregated group version
        self._session: aiohttp.ClientSession | None = None
        self._ticker: asyncio.Task[None] | None = None

    def running(self) -> bool:
        return self._worker is not None

    @property
    def _apiservices(self) -> Informer[Obj]:
        return self._informers.informer(APISERVICES)

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=CHECK_TIMEOUT))
        backends: Handlers[Obj] = Handlers(on_add=lambda obj, _: self._backend_changed(obj),
                                 on_update=lambda _, obj: self._backend_changed(obj),
                                 on_delete=self._backend_changed)
        own: Handlers[Obj] = Handlers(on_add=lambda obj, _: self._queue.add(key_of(obj)[1]),
                            on_update=lambda _, obj: self._queue.add(key_of(obj)[1]),
                            on_delete=lambda obj: self._queue.add(key_of(obj)[1]))
        for path, handlers in ((SERVICES, backends), (ENDPOINTS, backends), (APISERVICES, own)):
            informer = self._informers.informer(path)
            informer.add_handlers(handlers)
            await informer.start()
            self._followed.append((informer, handlers))
        self._worker = Worker(self._queue, self._sync, name="capstan-aggregation-controller", retry=_retry)
        self._worker.start()
        self._ticker = asyncio.create_task(self._tick(), name="capstan-aggregation-resync")

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            await asyncio.gather(self._ticker, return_exceptions=True)
            self._ticker = None
        if self._worker is not None:
            await self._worker.stop()
            self._worker = None
        for informer, handlers in self._followed:
            informer.remove_handlers(handlers)
            await informer.stop()
        self._followed.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self._resync)
            for obj in self._apiservices.cache.values():
                if aggregated.service_of(obj) is not None:
                    self._queue.add(key_of(obj)[1])

    async def locate(self, group: str, version: str) -> aggregated.Backend:
        """server/objects/aggregated.py's Locator, from the informers' caches (what this core last saw); the
        availability is this core's own latest check (set before the leader writes the condition, so a client
        that saw the condition finds the proxy agreeing)."""
        api_service = self._apiservices.cache.get(("", f"{version}.{group}")) if group else None
        service = aggregated.service_of(api_service) if api_service is not None else None
        if service is None:
            return await aggregated.backend_of(self._core, None)
        key = (str(service.get("namespace") or ""), str(service["name"]))
        known = self._core.registry.aggregated.get((group, version))
        return await aggregated.backend_of(
            self._core, api_service, service_obj=self._informers.informer(SERVICES).cache.get(key),
            endpoints=self._informers.informer(ENDPOINTS).cache.get(key), cached=True,
            checked=known.available if known is not None else None)

    def _backend_changed(self, obj: Obj) -> None:
        """A Service or Endpoints changed: check the APIServices that name it."""
        namespace, name = key_of(obj)
        for api_service in self._apiservices.cache.values():
            service = aggregated.service_of(api_service)
            if service is not None and service.get("namespace") == namespace and service.get("name") == name:
                self._queue.add(key_of(api_service)[1])

    async def _sync(self, name: str) -> None:
        obj = self._apiservices.cache.get(("", name))
        service = aggregated.service_of(obj) if obj is not None else None
        if obj is None or service is None:
            gone = self._group_versions.pop(name, None)
            if gone is not None:
                self._core.registry.set_aggregated(*gone, None)
            return
        spec = obj.get("spec") or {}
        group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
        previous = self._group_versions.get(name)
        if previous is not None and previous != (group, version):
            self._core.registry.set_aggregated(*previous, None)
        self._group_versions[name] = (group, version)
        status, reason, message, resources, openapi = await self._check(obj, service, group, version)
        known = self._core.registry.aggregated.get((group, version))
        if status != "True" and known is not None:
            resources, openapi = known.resources, known.openapi_v3
        self._core.registry.set_aggregated(group, version, AggregatedVersion(
            group, version, int(spec.get("groupPriorityMinimum") or 0), int(spec.get("versionPriority") or 0),
            status == "True", resources, openapi))
        if self._leading():
            await self._write_condition(obj, status, reason, message)

    async def _check(self, obj: Obj, service: Obj, group: str, version: str
                     ) -> tuple[str, str, str, bytes, bytes]:
        """(status, reason, message) of the Available condition, the backend's discovery document and its
        OpenAPI v3 document of the group version (b"" when it serves none)."""
        namespace, name = str(service.get("namespace") or ""), str(service["name"])
        try:
            endpoint = await serviceresolver.resolve(self._core, namespace, name,
                                                     int(service.get("port") or aggregated.DEFAULT_PORT))
        except serviceresolver.Unresolved as err:
            return "False", err.reason, err.message, b"", b""
        host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
        url = f"https://{host}:{endpoint.port}/apis/{group}/{version}"
        spec = obj.get("spec") or {}
        try:
            context = self._contexts.context(aggregated.ca_bundle(obj), bool(spec.get("insecureSkipTLSVerify")))
        except (ssl.SSLError, ValueError) as err:
            return "False", "FailedDiscoveryCheck", f"failing or missing response from {url}: {err}", b"", b""
        headers = forwarded_headers([("Accept", "application/json")], CHECKER_USER, CHECKER_GROUPS, {})
        assert self._session is not None
        try:
            async with self._session.get(url, headers=headers, ssl=context,
                                         server_hostname=service_server_name(name, namespace)) as response:
                body = await response.read()
                if not 200 <= response.status < 300:
                    failure = f"bad status from {url}: {response.status}"
                    return ("False", "FailedDiscoveryCheck", f"failing or missing response from {url}: {failure}",
                            b"", b"")
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            detail = str(err) or type(err).__name__
            return ("False", "FailedDiscoveryCheck",
                    f'failing or missing response from {url}: Get "{url}": {detail}', b"", b"")
        openapi = b""
        origin = url.removesuffix(f"/apis/{group}/{version}")
        try:
            async with self._session.get(f"{origin}/openapi/v3/apis/{group}/{version}", headers=headers, ssl=context,
                                         server_hostname=service_server_name(name, namespace)) as response:
                if response.status == 200:
                    openapi = await response.read()
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            log.info("APIService %s: no OpenAPI v3 document: %s", key_of(obj)[1], err)
        return (*PASSED, body, openapi)

    async def _write_condition(self, obj: Obj, status: str, reason: str, message: str) -> None:
        current = _condition_of(obj)
        if current is not None and (current.get("status"), current.get("reason"), current.get("message")) == (
                status, reason, message):
            return
        since = meta.now() if current is None or current.get("status") != status else current.get(
            "lastTransitionTime", meta.now())
        condition = {"type": "Available", "status": status, "lastTransitionTime": since,
                     "reason": reason, "message": message}
        conditions = [c for c in (obj.get("status") or {}).get("conditions") or []
                      if isinstance(c, dict) and c.get("type") != "Available"]
        updated = {**obj, "status": {**(obj.get("status") or {}), "conditions": [*conditions, condition]}}
        path = core_pb2.ResourcePath()
        path.CopyFrom(APISERVICES)
        path.name = key_of(obj)[1]
        path.subresource = "status"
        try:
            await self._core.update(core_pb2.UpdateRequest(
                path=path, object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(updated))))
        except errors.ApiError as err:
            if err.code not in (404, 409):
                raise
            # 409: the informer brings the newer object, which is checked again; 404: it is gone


def _retry(key: str, err: Exception) -> bool:
    log.warning("APIService %s check failed: %s", key, err)
    return True
