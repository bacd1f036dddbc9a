"""The aiohttp application: routes every Kubernetes REST path onto the core client.

Routing is data: requestinfo.parse turns a URL into (verb, group, version,
resource, namespace, name, subresource), and the resource is looked up in what
the core's Discover answered; there is no route per kind.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson
from aiohttp import web
from prometheus_client.registry import Collector

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import access, compression, health, limits, metrics, negotiation, parsed, requestinfo, restful
from gateway import faults as faults_api
from gateway.client import CoreClient, CoreError, failure
from gateway.codecs import json as json_codec
from gateway.connections import KUBE_LIMITS, MAX_HEADERS, ConnectionLimits, LimitedSite, somaxconn
from gateway.console import routes as console
from gateway.faults import FAULTS_KEY
from gateway.handlers import aggregated, delete, discovery, issuer, openapi, read, respond, watch, write
from gateway.handlers.context import Gateway, served_as
from gateway.handlers.request import MAX_BODY, Call, output, query_of, status_output
from gateway.parking import ParkingLot
from server.machinery import errors
from server.machinery.aggregation import ClientContexts, ProxyClientCertificate
from server.machinery.apimetrics import RequestMetrics
from server.machinery.faults import Faults, Rule
from server.machinery.limits.limiter import Limiter
from server.machinery.workerpeers import Peers

log = logging.getLogger(__name__)

GATEWAY_KEY = web.AppKey("gateway", Gateway)
PROXIER_KEY = web.AppKey("proxier", aggregated.Proxier)  # connections to extension API servers
PARKING_KEY = web.AppKey("parking", ParkingLot)  # the connections parked for flooding (gateway/parking.py)
# Paths go-restful serves in kube-apiserver (its web services /api..., /apis..., /version); a path under
# them that nothing serves is its 404 Status. Any other unknown path reaches the NotFoundHandler.
_GO_RESTFUL = frozenset({"api", "apis", "version"})


async def _dispatch(http: web.Request) -> web.StreamResponse:
    gateway = http.app[GATEWAY_KEY]
    out: negotiation.Output | None = None
    resource: core_pb2.Resource | None = None
    try:
        info = parsed.info_of(http)
        if info is None:
            return await _unrouted(gateway, http)
        if info.group and info.version and await gateway.aggregated(info.group, info.version):
            if isinstance(info, requestinfo.RequestInfo):
                http[metrics.INFO_KEY] = info  # counted and timed as any resource request
            return await aggregated.proxy(http.app[PROXIER_KEY], access.caller_client(gateway.client, http), info, http)
        if isinstance(info, requestinfo.DiscoveryInfo):
            return await _discovery(gateway, info, http)
        http[metrics.INFO_KEY] = info
        try:
            found = await gateway.resource(info.group, info.version, info.resource)
        except CoreError:
            await _unserved(gateway, info.group)
            return respond.go_not_found()
        # Most requests name a built-in kind's object or collection in its own scope, with an Accept its route
        # takes: one cached lookup; anything else goes through go-restful's whole route selection.
        accept = http.headers.get("Accept")
        if (info.subresource or bool(info.namespace) != found.namespaced or not restful.builtin(found)
                or http.method in ("HEAD", "PATCH") or not restful.accepted(accept, info.verb, "")):
            refusal = _routed(found, info, http)
            if refusal is not None:
                return refusal
        resource = served_as(found, info.subresource)
        out = output(http, resource, accept, stream=info.verb == "watch")
        call = Call(info, resource, query_of(http), out)
        injecting = http.app[FAULTS_KEY]
        if injecting.active and (rule := injecting.take(info)) is not None:
            return await _injected(rule, call, http)
        return _deprecated(resource, await _verb(access.caller_client(gateway.client, http), call, http))
    except CoreError as err:
        return _deprecated(resource, respond.status(status_output(http, resource, out), err.status))
    except negotiation.NegotiationError as err:
        return respond.status(None, failure(err.code, err.reason, err.message))


async def _unserved(gateway: Gateway, group: str) -> None:
    """For a resource the group does not serve: go-restful's 404 (raised) under a built-in group's web service;
    elsewhere kube-apiserver has no handler for the path at all (a group only custom resources or nobody serves),
    and the caller answers Go's text 404."""
    if await gateway.restful(group):
        raise CoreError(restful.not_found())


def _routed(resource: core_pb2.Resource, info: requestinfo.RequestInfo, http: web.Request) -> web.Response | None:
    """What answers before the resource's handler, None when the handler runs. For a built-in kind, go-restful's
    route selection: no route for the path (an object outside its scope, an unknown subresource: 404), HEAD
    (405), a Content-Type or Accept no route takes. For a custom resource, its handler's: Go's text 404 for an
    object outside its scope, the object's 404 for a subresource the CRD does not enable."""
    namespaced = resource.namespaced
    if ((info.namespace and not namespaced) or (namespaced and info.name and not info.namespace)
            or (info.subresource and not _serves_subresource(resource, info.subresource))):
        return _no_route(resource, info, http)
    if not restful.builtin(resource):
        return None
    refusal: meta_pb2.Status | None
    if http.method == "HEAD" and info.subresource != "proxy":
        refusal = restful.method_not_allowed()
    else:
        refusal = restful.resource_refusal(http.method, info, http.headers)
    return None if refusal is None else respond.status(_status_form(http, resource), refusal)


def _no_route(resource: core_pb2.Resource, info: requestinfo.RequestInfo, http: web.Request) -> web.Response:
    """A path the resource has no route for: an object outside its scope (go-restful's 404, Go's text 404 for a
    custom resource) or a subresource it does not have (go-restful's 404, the object's 404 for a custom
    resource)."""
    out_of_scope = bool(info.namespace) != resource.namespaced
    if restful.builtin(resource):
        return respond.status(_status_form(http, resource), restful.not_found())
    if out_of_scope:
        return respond.go_not_found()
    return respond.status(_status_form(http, resource),
                          errors.not_found(resource.resource, resource.group, info.name).status)


def _status_form(http: web.Request, resource: core_pb2.Resource | None) -> negotiation.Output | None:
    """How kube writes a Status that no handler wrote (ErrorNegotiated): in what the Accept header negotiates,
    or indented JSON when it negotiates nothing."""
    accept = restful.status_accept(http.headers.get("Accept"))
    if resource is None:
        return discovery.status_form(accept)
    try:
        return negotiation.negotiate_output(accept, protobuf=bool(resource.proto_message), table=False)
    except negotiation.NegotiationError:
        return None


def _serves_subresource(resource: core_pb2.Resource, subresource: str) -> bool:
    """Whether the resource has the subresource (no subresource: the resource itself)."""
    return not subresource or any(s.name == subresource for s in resource.subresources)


async def _unrouted(gateway: Gateway, http: web.Request) -> web.StreamResponse:
    """A path no verb of this method reaches: outside go-restful's web services Go's text 404; inside them, for a
    method no route takes on a path that names a resource, go-restful's 405 (the custom resource handler's
    MethodNotSupported, of the verb "" kube's RequestInfo gives such a method, for a custom resource), else
    go-restful's 404."""
    path = http.path
    if path in _INDEX:
        return await _index(http)
    if path.split("/")[1] not in _GO_RESTFUL:
        return respond.go_not_found()
    restful_path = not path.startswith("/apis/") or await gateway.restful(path.split("/")[2])
    named = requestinfo.parse("GET", path, {})
    if not isinstance(named, requestinfo.RequestInfo) or http.method in restful.ROUTED_METHODS:
        return respond.status(None, restful.not_found()) if restful_path else respond.go_not_found()
    try:
        found = await gateway.resource(named.group, named.version, named.resource)
    except CoreError:
        try:
            await _unserved(gateway, named.group)
        except CoreError as err:
            return respond.status(None, err.status)
        return respond.go_not_found()
    if not restful_path:
        return respond.status(None, errors.method_not_supported(found.resource, found.group, "").status)
    if _serves_subresource(found, named.subresource):
        return respond.status(None, restful.method_not_allowed())
    return respond.status(None, restful.not_found())


async def _discovery(gateway: Gateway, info: requestinfo.DiscoveryInfo, http: web.Request) -> web.StreamResponse:
    """Discovery as kube-apiserver routes it: /api, /api/v1 and a built-in group's versions are go-restful GET
    routes (405 for any other method, HEAD too; go-restful's 406); /apis and /apis/{group} are handlers of their
    own that answer every method; a group or version nobody serves outside go-restful is Go's text 404."""
    restful_path = info.prefix == "api" or (bool(info.version) and await gateway.restful(info.group))
    if restful_path:
        if http.method != "GET":
            raise CoreError(restful.method_not_allowed())
        refusal = restful.route_refusal("GET", None, None, http.headers.get("Accept"), restful.MEDIA_TYPES)
        if refusal is not None:
            return respond.status(_status_form(http, None), refusal)
    elif info.group and not await gateway.serves(info.group, info.version):
        return respond.go_not_found()
    return await discovery.serve(gateway, info, http)


async def _injected(rule: Rule, call: Call, http: web.Request) -> web.StreamResponse:
    """A fault rule's answer (gateway/faults.py): a watch's 410 as kube's cacher sends a too-old
    resourceVersion (200, then an ERROR event), anything else as the Status a filter or the verb would answer."""
    if rule.delay_seconds:
        await asyncio.sleep(rule.delay_seconds)
    status = rule.status(call.info, call.query.get("resourceVersion", [""])[0])
    if call.info.verb == "watch" and rule.code == 410:
        return await watch.failed_at_once(call, http, status)
    raise CoreError(status)


async def _index(http: web.Request) -> web.Response:
    """kube-apiserver's index at / (and /index.html): every path it lists, sorted, as indented JSON. Here: the
    discovery paths of every served group and version, each health endpoint and check, and the other fixed
    paths routed on this app; as kube's mux, any method. A path no resource request takes, so parsed.info_of
    names nothing and _unrouted answers it."""
    gateway = http.app[GATEWAY_KEY]
    discovered = await gateway.discovered()
    paths = {"/api", "/api/v1", "/apis", "/apis/"}
    served = [(r.group, r.version) for r in discovered.resources]
    served += [(a.group, a.version) for a in discovered.aggregated]
    for group, version in served:
        if group:
            paths.update((f"/apis/{group}", f"/apis/{group}/{version}"))
    health_checks = http.app[health.HEALTH_KEY]
    core = await health_checks.core()
    for endpoint in health.ENDPOINTS:
        paths.add(f"/{endpoint}")
        paths.update(f"/{endpoint}/{result.name}" for result in health_checks.assemble(endpoint, core))
    for route in http.app.router.resources():
        path = route.get_info().get("path")
        if isinstance(path, str) and not path.endswith("/"):
            paths.add(path)
    body = json_codec.encode(orjson.dumps({"paths": sorted(paths)}), pretty=True).rstrip(b"\n")
    return web.Response(body=body, headers={"Content-Type": negotiation.JSON})


# The index's own paths, which kube registers unlisted; the dispatcher answers them (a route of their own would be
# tried before the catch-all by every request).
_INDEX = frozenset({"/", "/index.html"})


def _deprecated(resource: core_pb2.Resource | None, response: web.StreamResponse) -> web.StreamResponse:
    """Every answer about a deprecated kind carries its warning, as kube-apiserver's installer adds it."""
    if resource is not None and resource.deprecation_warning and not response.prepared:
        for header in respond.warning_headers([resource.deprecation_warning]):
            response.headers.add(respond.WARNING_HEADER, header)
    return response


async def _verb(client: CoreClient, call: Call, http: web.Request) -> web.StreamResponse:
    verb = call.info.verb
    if verb == "get":
        return await read.get(client, call)
    if verb == "list":
        return await read.list_(client, call)
    if verb == "watch":
        return await watch.watch(client, call, http)
    if verb in ("create", "update", "patch", "delete") and call.connects:
        return await read.get(client, call)  # a connecter answers other methods as GET, from the query
    if verb == "create":
        return await write.create(client, call, http)
    if verb == "update":
        return await write.update(client, call, http)
    if verb == "patch":
        return await write.patch(client, call, http)
    if verb == "delete":
        return await delete.delete(client, call, http)
    if verb == "deletecollection":
        return await delete.delete_collection(client, call, http)
    raise CoreError(failure(405, "MethodNotAllowed",
                            f'{verb} is not supported on resources of kind "{call.info.resource}"'))


@web.middleware
async def _compress(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                    ) -> web.StreamResponse:
    """gzip large answers for clients that ask (gateway/compression.py); never watches (they stream, and are not
    web.Response), nor an answer already encoded (an extension API server's, relayed as it sent it). A whole
    list streamed page by page compresses itself (gateway/handlers/paging.py)."""
    response = await handler(request)
    body = response.body if isinstance(response, web.Response) else None
    if (isinstance(body, bytes) and len(body) >= compression.GZIP_THRESHOLD
            and "Content-Encoding" not in response.headers and compression.accepts_gzip(request.headers)):
        assert isinstance(response, web.Response)
        response.body = await compression.gzipped(body)
        compression.mark(response.headers)
    return response


@web.middleware
async def _no_tracebacks(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                         ) -> web.StreamResponse:
    """Whatever fails unexpectedly answers a 500 Status; the traceback goes to the log, not the client."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except Exception as err:
        log.exception("request failed: %s %s", request.method, request.path)
        return respond.status(None, failure(500, "InternalError", f"Internal error occurred: {err}"))


def build_app(client: CoreClient, *, server_address: str = "127.0.0.1:8080", limiter: Limiter | None = None,
              storage: metrics.StorageSize | None = None,
              collectors: Sequence[Collector] = (),
              core_metrics: bool = False,
              proxy_client: ProxyClientCertificate | None = None,
              faults: Faults | None = None,
              requests: RequestMetrics | None = None,
              refresh: Callable[[], Awaitable[None]] | None = None,
              peers: Peers | None = None) -> web.Application:
    """`limiter`: the load shedding of this process's transports (kube's defaults when None); `storage`: the
    store beside the gateway, when there is one, for its size and quota on /metrics; `collectors`: the figures
    of a core beside the gateway that /metrics also serves (its admission webhook metrics); `core_metrics`:
    /metrics also serves the figures of the core the client reaches (its Metrics call), for a gateway whose
    core runs in another process; `proxy_client`: the certificate presented to extension API servers (kube's
    --proxy-client-cert-file; None presents none); `faults`: the fault injection rules this gateway runs and whose admin
    API it serves (gateway/faults.py), enabled only with --fault-injection; None: off; `requests`: the request
    counters to count in (shared with a gRPC servicer beside the gateway; the gateway's own when None);
    `refresh`: awaited before each scrape; `peers`: the other workers of this server, whose figures /metrics
    adds to this worker's (gateway/metrics.py)."""
    limiter = limiter or Limiter()
    lot = ParkingLot(limiter)
    gateway = Gateway(client, server_address)
    counters = metrics.Metrics(limiter, storage, lot, collectors, gateway.apiservices, requests, refresh, peers)
    app = web.Application(client_max_size=MAX_BODY + 1,
                          middlewares=[counters.middleware, _no_tracebacks, limits.middleware(limiter, lot),
                                       access.middleware(client), _compress])
    app[PARKING_KEY] = lot
    proxier = app[PROXIER_KEY] = aggregated.Proxier(ClientContexts(proxy_client))

    async def unpark(_: web.Application) -> None:
        lot.close()

    async def disconnect(_: web.Application) -> None:
        await proxier.close()

    app.on_shutdown.append(unpark)
    app.on_cleanup.append(disconnect)
    app[GATEWAY_KEY] = gateway
    health.add_routes(app, client)
    # go-restful's CurlyRouter (v3.9, kube 1.28) splits a path trimmed of slashes, so the /version web
    # service's GET route answers /version/ as well (kr8s asks exactly that).
    app.router.add_route("*", "/version", discovery.version)
    app.router.add_route("*", "/version/", discovery.version)
    openapi.add_routes(app, app[GATEWAY_KEY])
    issuer.add_routes(app, client)
    faults_api.add_routes(app, faults or Faults())
    console.add_routes(app, access.CREDENTIALS_KEY, peers=peers)
    app.router.add_get("/metrics", metrics.with_core(counters, client) if core_metrics else counters.handle)
    app.router.add_route("*", "/{tail:.*}", _dispatch)
    return app


async def start_http(app: web.Application, listen: str, port: int, ssl_context: ssl.SSLContext | None = None,
                     *, connection_limits: ConnectionLimits = KUBE_LIMITS,
                     reuse_port: bool = False) -> tuple[web.AppRunner, int]:
    """Serve `app` on listen:port (0 picks a free port), over TLS with `ssl_context`, else plain HTTP, under
    kube-apiserver's `connection_limits` (gateway/connections.py); returns the runner and the bound port.
    With `reuse_port`, other processes serve the same port (SO_REUSEPORT: the kernel spreads connections)."""
    sock = socket.create_server((listen, port), family=_family(listen), reuse_port=reuse_port,
                                backlog=connection_limits.backlog or somaxconn())
    # aiohttp bounds each line and field; the request line and headers together are bounded by the site at
    # max_header_bytes, as Go's MaxHeaderBytes (a 10 KB bearer token or a long labelSelector fits).
    options: dict[str, Any] = {
        "access_log": None, "keepalive_timeout": connection_limits.idle_timeout, "max_headers": MAX_HEADERS,
        "max_line_size": connection_limits.max_header_bytes,
        "max_field_size": connection_limits.max_header_bytes,
    }
    # handler_cancellation: a client that goes away cancels its handler (a watch frees the core's at once).
    runner = web.AppRunner(app, handler_cancellation=True, **options)
    try:
        await runner.setup()
        await LimitedSite(runner, sock, limits=connection_limits, ssl_context=ssl_context, options=options).start()
    except BaseException:
        await runner.cleanup()
        sock.close()
        raise
    bound: int = sock.getsockname()[1]
    return runner, bound


def _family(listen: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in listen else socket.AF_INET
