"""kube-apiserver's own metrics, under kube's names and labels, so its dashboards and alerts read Capstan's.

Two kinds of figures live here:
- `RequestMetrics`: apiserver_request_total and apiserver_request_duration_seconds, one pair per registry. The
  gateway counts REST requests in one; the gRPC servicer counts CoreService calls in one (in `capstan serve`,
  the same one, so a scrape sees every request whichever transport carried it; a call of the in-process gateway
  is counted once, as the REST request it serves).
- Process-wide figures of the core, in `REGISTRY`: authentication_attempts and authentication_duration_seconds
  (the authenticator's result), apiserver_admission_step_admission_duration_seconds and
  apiserver_admission_controller_admission_duration_seconds (the chain's steps and plugins),
  apiserver_registered_watchers and apiserver_watch_events_total (watches by group, version and kind), and
  leader_election_master_status. A core's Metrics call and `capstan serve`'s /metrics serve them.

`runtime_collectors` adds client_golang's process_* figures (the `prometheus_client` process collector) and the
Python runtime's (python_info, python_gc_*), as a Go component exports process_* and go_*.

The figures recorded on every request are `LoopCounter`s and `LoopHistogram`s: families whose children are
plain counts (an add, or a bisect and two adds, ~0.2 µs) with no lock, since every request is observed on the
event loop's thread; prometheus_client's own (a lock and an exemplar check per observation, ~1.5 µs) remain for
figures observed from several threads. A scrape reads either kind alike. Label children are looked up once per
label set and kept.
Pure: imports only prometheus_client and the standard library, so every layer may record here.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Gauge,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

_Child = TypeVar("_Child")

REQUEST_LABELS = ("verb", "group", "version", "resource", "subresource", "scope", "component", "code")
REQUEST_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30,
                   45, 60)
COMPONENT = "apiserver"
# The REST verb each CoreService verb is counted as (kube's metrics name verbs as the request's method, with
# LIST, WATCH and DELETECOLLECTION told apart; a create is POST).
REST_VERBS = {"get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST", "update": "PUT", "patch": "PATCH",
              "delete": "DELETE", "deletecollection": "DELETECOLLECTION", "connect": "CONNECT"}


class _LoopFamily(Collector, Generic[_Child]):
    """A family of children by label values, registered where asked; `_made` makes a child."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str],
                 registry: CollectorRegistry | None) -> None:
        self._name, self._documentation, self._labelnames = name, documentation, tuple(labelnames)
        self._children: dict[tuple[str, ...], _Child] = {}
        if registry is not None:
            registry.register(self)

    def _made(self) -> _Child:
        raise NotImplementedError

    def labels(self, *values: str) -> _Child:
        child = self._children.get(values)
        if child is None:
            child = self._children[values] = self._made()
        return child


class _CounterChild:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class LoopCounter(_LoopFamily[_CounterChild]):
    """A counter family incremented on one thread only (the event loop's): `labels(...)` gives a child whose
    `inc` is an add. Exposed as `<name>_total`, as prometheus_client's Counter and client_golang's are."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str],
                 registry: CollectorRegistry | None = None) -> None:
        super().__init__(name, documentation, labelnames, registry)

    def _made(self) -> _CounterChild:
        return _CounterChild()

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)
        for values, child in list(self._children.items()):
            family.add_metric(values, child.value)
        yield family


class LoopHistogram(_LoopFamily["_HistogramChild"]):
    """A histogram family observed on one thread only (the event loop's): a child's `observe` is a bisect over
    the bounds and two adds; the cumulative buckets are summed when scraped."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float],
                 registry: CollectorRegistry | None = None) -> None:
        self._bounds = tuple(float(bound) for bound in buckets)
        go_float = floatToGoString  # Go's float formatting, as the `le` labels of client_golang's histograms
        self._les = [go_float(bound) for bound in self._bounds] + ["+Inf"]  # type: ignore[no-untyped-call]
        super().__init__(name, documentation, labelnames, registry)

    def _made(self) -> _HistogramChild:
        return _HistogramChild(self._bounds)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)
        for values, child in list(self._children.items()):
            cumulative, buckets = 0, []
            for le, count in zip(self._les, list(child.counts), strict=True):
                cumulative += count
                buckets.append((le, float(cumulative)))
            family.add_metric(values, buckets, child.sum)
        yield family


class _HistogramChild:
    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last: above every bound (+Inf)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1  # a bucket counts values up to its bound, inclusive
        self.sum += value


class RequestMetrics:
    """apiserver_request_total and apiserver_request_duration_seconds in `registry`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.requests = LoopCounter("apiserver_request", "Counter of apiserver requests broken out for each verb, "
                                "dry run value, group, version, resource, scope, component, and HTTP response "
                                "code.", REQUEST_LABELS, registry=registry)
        self.latency = LoopHistogram("apiserver_request_duration_seconds", "Response latency distribution in seconds "
                                 "for each verb, group, version, resource, subresource, scope and component.",
                                 REQUEST_LABELS[:-1], buckets=REQUEST_BUCKETS, registry=registry)
        self._children: dict[tuple[str, ...], tuple[_CounterChild, _HistogramChild]] = {}

    def observe(self, labels: tuple[str, str, str, str, str, str, str], code: int, seconds: float) -> None:
        """One request: `labels` are REQUEST_LABELS without the code."""
        key = (*labels, str(code))
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (self.requests.labels(*key), self.latency.labels(*labels))
        children[0].inc()
        children[1].observe(seconds)


def request_labels(verb: str, group: str, version: str, resource: str, subresource: str, namespace: str,
                   name: str) -> tuple[str, str, str, str, str, str, str]:
    """REQUEST_LABELS (without the code) of a resource request, scope as kube's metrics tell it."""
    scope = "resource" if name else ("namespace" if namespace else "cluster")
    return (REST_VERBS.get(verb, verb.upper()), group, version, resource, subresource, scope, COMPONENT)


def runtime_collectors(registry: CollectorRegistry) -> None:
    """Register process_* and python_* (the default registry's collectors) in `registry`."""
    for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(_Forward(collector))


class _Forward(Collector):
    """A collector of the default registry, served by another (a collector may belong to several)."""

    def __init__(self, collector: Collector) -> None:
        self._collector = collector

    def collect(self) -> Iterable[Metric]:
        return self._collector.collect()


REGISTRY = CollectorRegistry(auto_describe=True)

# kube's authentication metrics (k8s.io/apiserver/pkg/authentication/request/... metrics.go)
_AUTHN_ATTEMPTS = LoopCounter("authentication_attempts", "Counter of authenticated attempts.", ["result"],
                          registry=REGISTRY)
_AUTHN_DURATION = LoopHistogram("authentication_duration_seconds", "Authentication duration in seconds broken out by "
                            "result.", ["result"], buckets=(0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128,
                                                            0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384),
                            registry=REGISTRY)
_AUTHN = {result: (_AUTHN_ATTEMPTS.labels(result), _AUTHN_DURATION.labels(result))
          for result in ("success", "failure", "error")}


def authenticated(result: str, seconds: float) -> None:
    """One authentication: "success", "failure" (nobody proven) or "error" (the authenticator failed)."""
    attempts, duration = _AUTHN[result]
    attempts.inc()
    duration.observe(seconds)


# kube's admission metrics (k8s.io/apiserver/pkg/admission/metrics)
_STEP_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1.0, 2.5)
_STEP = LoopHistogram("apiserver_admission_step_admission_duration_seconds", "Admission sub-step latency histogram in "
                  "seconds, broken out for each operation and API resource and step type (validate or admit).",
                  ["type", "operation", "rejected"], buckets=_STEP_BUCKETS, registry=REGISTRY)
_CONTROLLER = LoopHistogram("apiserver_admission_controller_admission_duration_seconds", "Admission controller latency "
                        "histogram in seconds, identified by name and broken out for each operation and API "
                        "resource and type (validate or admit).", ["name", "type", "operation", "rejected"],
                        buckets=_STEP_BUCKETS, registry=REGISTRY)
_STEP_CHILDREN: dict[tuple[str, str, bool], _HistogramChild] = {}
_CONTROLLER_CHILDREN: dict[tuple[str, str, str, bool], _HistogramChild] = {}


def admission_step(kind: str, operation: str, rejected: bool, seconds: float) -> None:
    """One admission step: kind "admit" (mutating) or "validate"."""
    key = (kind, operation, rejected)
    child = _STEP_CHILDREN.get(key)
    if child is None:
        child = _STEP_CHILDREN[key] = _STEP.labels(kind, operation, "true" if rejected else "false")
    child.observe(seconds)


def admission_controller(name: str, kind: str, operation: str, rejected: bool, seconds: float) -> None:
    """One admission plugin's step."""
    key = (name, kind, operation, rejected)
    child = _CONTROLLER_CHILDREN.get(key)
    if child is None:
        child = _CONTROLLER_CHILDREN[key] = _CONTROLLER.labels(name, kind, operation,
                                                               "true" if rejected else "false")
    child.observe(seconds)


# Pod Security admission's metrics (k8s.io/pod-security-admission/metrics): its policy evaluations, exempt requests
# and the errors that kept a request from its normal evaluation.
_PSA_EVALUATIONS = LoopCounter(
    "pod_security_evaluations", "Number of policy evaluations that occurred, not counting ignored or exempt "
    "requests.", ["decision", "policy_level", "policy_version", "mode", "request_operation", "resource",
                  "subresource"], registry=REGISTRY)
_PSA_EXEMPTIONS = LoopCounter(
    "pod_security_exemptions", "Number of exempt requests, not counting ignored or out of scope requests.",
    ["request_operation", "resource", "subresource"], registry=REGISTRY)
_PSA_ERRORS = LoopCounter(
    "pod_security_errors", "Number of errors preventing normal evaluation. Non-fatal errors may result in the latest "
    "restricted profile being used for evaluation.", ["fatal", "request_operation", "resource", "subresource"],
    registry=REGISTRY)


def pod_security_evaluation(decision: str, level: str, version: str, mode: str, operation: str, resource: str,
                            subresource: str) -> None:
    """One evaluation: decision "allow" or "deny", mode "enforce", "audit" or "warn"."""
    _PSA_EVALUATIONS.labels(decision, level, version, mode, operation, resource, subresource).inc()


def pod_security_exemption(operation: str, resource: str, subresource: str) -> None:
    _PSA_EXEMPTIONS.labels(operation, resource, subresource).inc()


def pod_security_error(fatal: bool, operation: str, resource: str, subresource: str) -> None:
    _PSA_ERRORS.labels("true" if fatal else "false", operation, resource, subresource).inc()


# kube's watch metrics (k8s.io/apiserver/pkg/endpoints/metrics)
_WATCHERS = Gauge("apiserver_registered_watchers", "Number of currently registered watchers for a given "
                  "resources", ["group", "version", "kind"], registry=REGISTRY)
_WATCH_EVENTS = LoopCounter("apiserver_watch_events", "Number of events sent in watch clients",
                        ["group", "version", "kind"], registry=REGISTRY)
_WATCH_CHILDREN: dict[tuple[str, str, str], tuple[Gauge, _CounterChild]] = {}


class WatchFigures:
    """One resource's watch figures, looked up once per watch."""

    __slots__ = ("events", "watchers")

    def __init__(self, group: str, version: str, kind: str) -> None:
        key = (group, version, kind)
        children = _WATCH_CHILDREN.get(key)
        if children is None:
            children = _WATCH_CHILDREN[key] = (_WATCHERS.labels(*key), _WATCH_EVENTS.labels(*key))
        self.watchers, self.events = children


# client-go's leader election metric (k8s.io/client-go/tools/leaderelection/metrics.go)
_LEADER = Gauge("leader_election_master_status", "Gauge of if the reporting system is master of the relevant "
                "lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. "
                "Please make sure to group by name.", ["name"], registry=REGISTRY)


def leading(name: str, is_leader: bool) -> None:
    _LEADER.labels(name).set(1 if is_leader else 0)


class StorageObjects(Collector):
    """apiserver_storage_objects{resource}: the objects stored per resource ("<resource>.<group>", bare for the
    core group), as last counted (server/objects/storageobjects.py counts them)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def collect(self) -> Iterable[Metric]:
        gauge = GaugeMetricFamily("apiserver_storage_objects", "Number of stored objects at the time of last "
                                  "check split by kind.", labels=["resource"])
        for resource, count in sorted(self.counts.items()):
            gauge.add_metric([resource], count)
        yield gauge
