"""kube-apiserver's admission webhook metrics (k8s.io/apiserver/pkg/admission/metrics), under kube's names and
labels: `type` is "admit" for a mutating webhook and "validate" for a validating one."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

# kube's buckets for webhook latency (admission/metrics.go)
_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0)

ADMISSION_DURATION = Histogram(
    "apiserver_admission_webhook_admission_duration_seconds",
    "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and "
    "API resource and type (validate or admit).",
    ["name", "type", "operation", "rejected"], buckets=_BUCKETS, registry=REGISTRY)
REJECTION_COUNT = Counter(
    "apiserver_admission_webhook_rejection_count",
    "Admission webhook rejection count, identified by name and broken out for each admission type (validating "
    "or admit) and operation. Additional labels specify an error type (calling_webhook_error or "
    "apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code "
    "if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is "
    "greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality "
    "bounded.",
    ["name", "type", "operation", "error_type", "rejection_code"], registry=REGISTRY)
REQUEST_TOTAL = Counter(
    "apiserver_admission_webhook_request_total",
    "Admission webhook request total, identified by name and broken out for each admission type (validating or "
    "mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP "
    "status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
    ["name", "type", "operation", "code", "rejected"], registry=REGISTRY)
FAIL_OPEN_COUNT = Counter(
    "apiserver_admission_webhook_fail_open_count",
    "Admission webhook fail open count, identified by name and broken out for each admission type (validating or "
    "mutating).",
    ["name", "type"], registry=REGISTRY)


def observe(name: str, kind: str, operation: str, *, seconds: float, rejected: bool, code: int,
            error_type: str) -> None:
    """One webhook call: its latency, its answer's HTTP code (0 when none came) and, when it rejected the
    request, why (error_type "no_error" for a denial, "calling_webhook_error" for a failed call)."""
    shown = str(min(code, 600))
    ADMISSION_DURATION.labels(name, kind, operation, str(rejected).lower()).observe(seconds)
    REQUEST_TOTAL.labels(name, kind, operation, shown, str(rejected).lower()).inc()
    if rejected:
        REJECTION_COUNT.labels(name, kind, operation, error_type, shown if code >= 400 else "0").inc()


def failed_open(name: str, kind: str) -> None:
    FAIL_OPEN_COUNT.labels(name, kind).inc()
