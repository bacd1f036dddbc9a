"""Prometheus metrics at /metrics, named as kube-apiserver names them.

apiserver_request_total counts requests by verb, group, version, resource,
subresource, scope and HTTP code; apiserver_request_duration_seconds observes
their latency (for a watch: how long it stayed open). Each app has its own
registry, so several gateways in one process (tests) do not share counters.
The load shedding's counts (server/machinery/limits/) are read from the limiter when
scraped, under kube's names: apiserver_current_inflight_requests,
apiserver_flowcontrol_current_executing_requests and _current_inqueue_requests
(priority_level is the request kind), apiserver_flowcontrol_rejected_requests_total
(by reason) and apiserver_dropped_requests_total.
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
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.access import caller_client
from gateway.client import CoreClient, CoreError
from gateway.requestinfo import RequestInfo
from server.machinery.limits.limiter import Limiter

INFO_KEY = web.RequestKey("capstan_request_info", RequestInfo)  # set by the dispatcher once it knows what was asked
LABELS = ("verb", "group", "version", "resource", "subresource", "scope", "component", "code")
BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60)
_VERBS = {"get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST", "update": "PUT", "patch": "PATCH",
          "delete": "DELETE", "deletecollection": "DELETECOLLECTION"}

log = logging.getLogger("capstan.gateway.metrics")

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
                 apiservices: Callable[[], Iterable[tuple[str, bool]]] | None = None) -> None:
        """`apiservices`: (name, available) of each APIService with a service, when scraped."""
        self.registry = CollectorRegistry()
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
        self.requests = Counter("apiserver_request", "Counter of apiserver requests broken out for each verb, "
                                "dry run value, group, version, resource, scope, component, and HTTP response code.",
                                LABELS, registry=self.registry)
        self.latency = Histogram("apiserver_request_duration_seconds", "Response latency distribution in seconds "
                                 "for each verb, group, version, resource, subresource, scope and component.",
                                 LABELS[:-1], buckets=BUCKETS, registry=self.registry)
        # Each label set's counter and histogram, found once: prometheus_client's labels() checks and joins its
        # arguments on every call. As many entries as the metrics themselves hold label sets.
        self._children: dict[tuple[str, ...], tuple[Any, Any]] = {}

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
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
            info = request.get(INFO_KEY)
            if isinstance(info, RequestInfo):
                labels = (*_labels(info), str(code))
                children = self._children.get(labels)
                if children is None:
                    children = self._children[labels] = (self.requests.labels(*labels),
                                                          self.latency.labels(*labels[:-1]))
                children[0].inc()
                children[1].observe(time.perf_counter() - started)

    async def handle(self, request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})


def _labels(info: RequestInfo) -> tuple[str, ...]:
    scope = "resource" if info.name else ("namespace" if info.namespace else "cluster")
    return (_VERBS.get(info.verb, info.verb.upper()), info.group, info.version, info.resource, info.subresource,
            scope, "apiserver")


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
        for lane in self._limiter.states():
            kind = lane.kind.value
            inflight.add_metric([kind], lane.executing)
            executing.add_metric([kind, FLOW_SCHEMA], lane.executing)
            inqueue.add_metric([kind, FLOW_SCHEMA], lane.queued)
            for reason, count in sorted(lane.rejected.items()):
                rejected.add_metric([kind, FLOW_SCHEMA, reason], count)
            dropped.add_metric([kind], sum(lane.rejected.values()))
        yield from (inflight, executing, inqueue, rejected, dropped)


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
        own = generate_latest(counters.registry)
        try:
            answer = await caller_client(client, request).metrics(core_pb2.MetricsRequest())
        except CoreError as err:
            log.warning("/metrics without the core's figures: %s", err.status.message)
            return web.Response(body=own, headers={"Content-Type": CONTENT_TYPE_LATEST})
        return web.Response(body=own + answer.data, headers={"Content-Type": CONTENT_TYPE_LATEST})

    return handle
