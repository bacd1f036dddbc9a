"""Prometheus metrics at /metrics, named as kube-apiserver names them.

apiserver_request_total counts requests by verb, group, version, resource,
subresource, scope and HTTP code; apiserver_request_duration_seconds observes
their latency (for a watch: how long it stayed open). Each app has its own
registry, so several gateways in one process (tests) do not share counters.
The load shedding's counts (server/machinery/limits/) are read from the limiter when
scraped, under kube's names: apiserver_current_inflight_requests,
apiserver_flowcontrol_current_executing_requests and _current_inqueue_requests
(priority_level is the request kind), apiserver_flowcontrol_rejected_requests_total
(by reason), apiserver_flowcontrol_dispatched_requests_total, apiserver_flowcontrol_current_limit_seats (the
lane's limit) and apiserver_dropped_requests_total.
Collectors of the core beside the gateway (`capstan serve`: its apiserver_admission_webhook_* metrics) are
registered as given; a gateway whose core is another process (`capstan gateway --core`) asks that core for them
at each scrape (`with_core`, the core's Metrics call) and serves them after its own.
aggregator_unavailable_apiservice is 1 for each APIService with a service that is not Available and 0 for one
that is, from the core's latest Discover answer, as kube-aggregator reports it (for those; Local APIServices are
always available and not listed).
The store's size and quota, where the gateway runs beside it (`capstan serve`), are read when
scraped too: kube's apiserver_storage_size_bytes and etcd's etcd_server_quota_backend_bytes
(kube-apiserver does not export the quota; etcd, which enforces it, does).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Protocol

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import access
from gateway.access import caller_client
from gateway.client import CoreClient, CoreError
from gateway.handlers.respond import status
from gateway.requestinfo import RequestInfo
from server.machinery import apimetrics, klog, tracing, workerpeers
from server.machinery.limits.limiter import Limiter

INFO_KEY = web.RequestKey("capstan_request_info", RequestInfo)  # set by the dispatcher once it knows what was asked
LABELS = apimetrics.REQUEST_LABELS

log = logging.getLogger("capstan.gateway.metrics")
httplog = logging.getLogger("capstan.httplog")  # kube's request log, on at -v=3
HTTPLOG_LEVEL = klog.level(3)

STORAGE_CLUSTER_ID = "capstan"  # the label kube gives the storage's size by; Capstan has one store

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class StorageSize(Protocol):
    """What the metrics read of a store beside the gateway (a storage.Store satisfies it)."""

    def size_bytes(self) -> int: ...

    def quota_bytes(self) -> int | None: ...


class Parked(Protocol):
    """gateway/parking.py's ParkingLot, as /metrics reads it."""

    parked: int
    parks: int


class Metrics:
    def __init__(self, limiter: Limiter | None = None, storage: StorageSize | None = None,
                 parked: Parked | None = None, collectors: Sequence[Collector] = (),
                 apiservices: Callable[[], Iterable[tuple[str, bool]]] | None = None,
                 requests: apimetrics.RequestMetrics | None = None,
                 refresh: Callable[[], Awaitable[None]] | None = None,
                 peers: workerpeers.Peers | None = None, kind: str = "http") -> None:
        """`apiservices`: (name, available) of each APIService with a service, when scraped; `requests`: the
        request counters to count in (the gRPC servicer's beside it, in `capstan serve`), else the gateway's own
        registry's, with process_* and python_* beside them; `refresh`: awaited before each scrape (the store's
        object counts); `peers`: the other workers of this server, whose `kind` of figures a scrape adds to this
        worker's (and which ask this worker for its own)."""
        self.refresh = refresh
        self.peers = peers
        self.kind = kind
        if peers is not None:
            peers.provide(kind, self._own_for_peer)
        self.registry = requests.registry if requests is not None else CollectorRegistry()
        if requests is None:
            apimetrics.runtime_collectors(self.registry)
        for collector in collectors:
            self.registry.register(collector)
        if apiservices is not None:
            self.registry.register(_AggregatorCollector(apiservices))
        if limiter is not None:
            self.registry.register(_LimiterCollector(limiter))
        if parked is not None:
            self.registry.register(_ParkingCollector(parked))
        if storage is not None:
            self.registry.register(_StorageCollector(storage))
        self.counted = requests if requests is not None else apimetrics.RequestMetrics(self.registry)
        self.requests = self.counted.requests
        self.latency = self.counted.latency

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if tracing.enabled():
            return await self._traced(request, handler)
        return await self._counted(request, handler)

    async def _traced(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The request in kube's HTTP server span ("KubernetesAPI", otelhttp's attributes), continuing the
        client's trace when it sent a traceparent."""
        attributes = {"http.method": request.method, "http.target": request.path_qs,
                      "http.user_agent": request.headers.get("User-Agent", ""), "http.scheme": request.scheme}
        with tracing.span("KubernetesAPI", attributes, server=True,
                          parent=tracing.headers_of(request.headers)) as current:
            response = await self._counted(request, handler)
            tracing.set_attribute(current, "http.status_code", response.status)
            return response

    async def _counted(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        code = 500
        try:
            response = await handler(request)
            code = response.status
            return response
        except web.HTTPException as err:
            code = err.status
            raise
        finally:
            elapsed = time.perf_counter() - started
            try:  # not request.get: see gateway/parsed.py
                info: RequestInfo | None = request[INFO_KEY]
            except KeyError:
                info = None
            if info is not None:
                self.counted.observe(_labels(info), code, elapsed)
            if httplog.isEnabledFor(HTTPLOG_LEVEL):
                _log_request(request, code, elapsed)

    async def own(self) -> bytes:
        """This process's figures alone."""
        if self.refresh is not None:
            await self.refresh()
        return generate_latest(self.registry)

    async def _own_for_peer(self, argument: bytes) -> bytes:
        return await self.own()

    async def figures(self) -> bytes:
        """The server's figures: this process's, merged with every other worker's when it has some."""
        return await workerpeers.server_figures(await self.own(), self.peers, self.kind)

    async def handle(self, request: web.Request) -> web.Response:
        return web.Response(body=await self.figures(), headers={"Content-Type": CONTENT_TYPE_LATEST})


def _labels(info: RequestInfo) -> tuple[str, str, str, str, str, str, str]:
    return apimetrics.request_labels(info.verb, info.group, info.version, info.resource, info.subresource,
                                     info.namespace, info.name)


def _log_request(request: web.Request, code: int, seconds: float) -> None:
    """kube's httplog line at V(3): `"HTTP" verb="GET" URI="/api/v1/..." latency=... userAgent=... srcIP=...
    resp=200`. The user is the core's to know (it authenticates); the audit log names it."""
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    source = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else ""
    info = request.get(INFO_KEY)
    verb = _labels(info)[0] if isinstance(info, RequestInfo) else request.method
    klog.info_s(httplog, 3, "HTTP", verb=verb, URI=request.path_qs, latency=klog.duration(seconds),
                userAgent=request.headers.get("User-Agent", ""), srcIP=source, resp=code)


FLOW_SCHEMA = "per-client"  # the one way requests are told apart: by credential (server/machinery/limits/flow.py)


class _LimiterCollector(Collector):
    def __init__(self, limiter: Limiter) -> None:
        self._limiter = limiter

    def collect(self) -> Iterator[Metric]:
        inflight = GaugeMetricFamily("apiserver_current_inflight_requests", "Number of requests currently "
                                     "executing in this apiserver, per request kind.", labels=["request_kind"])
        executing = GaugeMetricFamily("apiserver_flowcontrol_current_executing_requests", "Number of requests in "
                                      "regular execution phase in the API Priority and Fairness subsystem",
                                      labels=["priority_level", "flow_schema"])
        inqueue = GaugeMetricFamily("apiserver_flowcontrol_current_inqueue_requests", "Number of requests "
                                    "currently pending in queues of the API Priority and Fairness subsystem",
                                    labels=["priority_level", "flow_schema"])
        rejected = CounterMetricFamily("apiserver_flowcontrol_rejected_requests", "Number of requests rejected by "
                                       "API Priority and Fairness subsystem",
                                       labels=["priority_level", "flow_schema", "reason"])
        dropped = CounterMetricFamily("apiserver_dropped_requests", "Number of requests dropped with 'Try again "
                                      "later' response", labels=["request_kind"])
        dispatched = CounterMetricFamily("apiserver_flowcontrol_dispatched_requests", "Number of requests "
                                         "executed by API Priority and Fairness subsystem",
                                         labels=["priority_level", "flow_schema"])
        limit = GaugeMetricFamily("apiserver_flowcontrol_current_limit_seats", "current derived number of "
                                  "execution seats available to each priority level", labels=["priority_level"])
        for lane in self._limiter.states():
            kind = lane.kind.value
            inflight.add_metric([kind], lane.executing)
            executing.add_metric([kind, FLOW_SCHEMA], lane.executing)
            inqueue.add_metric([kind, FLOW_SCHEMA], lane.queued)
            for reason, count in sorted(lane.rejected.items()):
                rejected.add_metric([kind, FLOW_SCHEMA, reason], count)
            dropped.add_metric([kind], sum(lane.rejected.values()))
            dispatched.add_metric([kind, FLOW_SCHEMA], lane.dispatched)
            if lane.limit > 0:
                limit.add_metric([kind], lane.limit)
        yield from (inflight, executing, inqueue, rejected, dropped, dispatched, limit)


class _AggregatorCollector(Collector):
    def __init__(self, apiservices: Callable[[], Iterable[tuple[str, bool]]]) -> None:
        self._apiservices = apiservices

    def collect(self) -> Iterator[Metric]:
        gauge = GaugeMetricFamily("aggregator_unavailable_apiservice", "Gauge of APIServices which are marked as "
                                  "unavailable broken down by APIService name.", labels=["name"])
        for name, available in sorted(self._apiservices()):
            gauge.add_metric([name], 0 if available else 1)
        yield gauge


class _ParkingCollector(Collector):
    """Capstan's own (kube-apiserver parks nothing): connections of flooding clients not being read."""

    def __init__(self, parked: Parked) -> None:
        self._parked = parked

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily("capstan_parked_connections", "HTTP connections of clients with a full queue, "
                                "not read until it drains.", value=self._parked.parked)
        yield CounterMetricFamily("capstan_connections_parked", "HTTP connections parked so far.",
                                  value=self._parked.parks)


class _StorageCollector(Collector):
    def __init__(self, storage: StorageSize) -> None:
        self._storage = storage

    def collect(self) -> Iterator[Metric]:
        size = GaugeMetricFamily("apiserver_storage_size_bytes", "Size of the storage database file physically "
                                 "allocated in bytes.", labels=["storage_cluster_id"])
        with contextlib.suppress(Exception):  # a closed or failing store is /readyz's to report, not the scrape's
            size.add_metric([STORAGE_CLUSTER_ID], self._storage.size_bytes())
        yield size
        quota = self._storage.quota_bytes()
        if quota is not None:
            yield GaugeMetricFamily("etcd_server_quota_backend_bytes", "Current backend storage quota size in "
                                    "bytes.", value=quota)


def with_core(counters: Metrics, client: CoreClient) -> Callable[[web.Request], Awaitable[web.Response]]:
    """/metrics of a gateway whose core runs in another process: this process's figures, then the core's own
    (its admission webhook metrics, from its Metrics call with the scraper's credentials). With several cores
    the call reaches one, as a load balancer in front of several kube-apiservers answers /metrics from one;
    a core that cannot answer leaves its figures out of this scrape, logged."""

    async def handle(request: web.Request) -> web.Response:
        own = await counters.figures()
        try:
            answer = await caller_client(client, request).metrics(core_pb2.MetricsRequest())
        except CoreError as err:
            log.warning("/metrics without the core's figures: %s", err.status.message)
            return web.Response(body=own, headers={"Content-Type": CONTENT_TYPE_LATEST})
        return web.Response(body=own + answer.data, headers={"Content-Type": CONTENT_TYPE_LATEST})

    return handle


def metrics_app(client: CoreClient, counters: Metrics) -> web.Application:
    """An application serving only /metrics, secured as kube-apiserver's: the caller is authenticated and must
    be allowed the non-resource `get /metrics` (the core's Access, then its Metrics call, with the caller's
    credentials; 401/403 otherwise). It serves `counters`' figures, then the core's own. `capstan core
    --metrics-port` serves it, for a core that has no gateway beside it."""
    app = web.Application(middlewares=[access.middleware(client)])

    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            answer = await caller_client(client, request).metrics(core_pb2.MetricsRequest())
        except CoreError as err:
            return status(None, err.status)
        return web.Response(body=await counters.figures() + answer.data,
                            headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.router.add_get("/metrics", handle)
    return app
