"""Table columns of the webhook configurations, APIServices and HorizontalPodAutoscalers, as kube-apiserver 1.28
prints them (pkg/printers/internalversion/printers.go: printValidatingWebhook, printMutatingWebhook,
printHorizontalPodAutoscaler with formatHPAMetrics; kube-aggregator's APIService table convertor).

HorizontalPodAutoscalers print from the stored v2 form whichever version is read, as kube prints the internal
object: an autoscaler at 80% CPU with no metrics observed yet prints TARGETS `<unknown>/80%`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import list_of as _list
from server.registry.printing.columns import AGE, NAME
from server.registry.strategy import Column

WEBHOOKS_DESCRIPTION = "Webhooks indicates the number of webhooks registered in this configuration"
SERVICE_DESCRIPTION = "The reference to the service that hosts this API endpoint."
AVAILABLE_DESCRIPTION = "Whether this service is available."
# autoscaling/v2 HorizontalPodAutoscalerSpec and Status field docs.
HPA_REFERENCE_DESCRIPTION = (
    "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be "
    "collected, as well as to actually change the replica count."
)
HPA_TARGETS_DESCRIPTION = (
    "metrics contains the specifications for which to use to calculate the desired replica count (the maximum "
    "replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio "
    "between the target value and the current value by the current number of pods.  Ergo, metrics used must "
    "decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more "
    "information about how each type of metric must respond."
)
HPA_MIN_PODS_DESCRIPTION = (
    "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults "
    "to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one "
    "Object or External metric is configured.  Scaling is active as long as at least one metric value is available."
)
HPA_MAX_PODS_DESCRIPTION = (
    "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be "
    "less that minReplicas."
)
HPA_REPLICAS_DESCRIPTION = (
    "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler."
)
UNKNOWN = "<unknown>"
MAX_METRICS = 2  # formatHPAMetrics prints two, then "+ N more..."


def _webhooks(obj: Obj) -> int:
    return len(_list(obj.get("webhooks")))


def _service(obj: Obj) -> str:
    service = _dict(obj.get("spec")).get("service")
    if not isinstance(service, dict):
        return "Local"
    return f"{service.get('namespace', '')}/{service.get('name', '')}"


def _available(obj: Obj) -> str:
    for condition in _list(_dict(obj.get("status")).get("conditions")):
        condition = _dict(condition)
        if condition.get("type") == "Available":
            status, reason = str(condition.get("status", "")), condition.get("reason")
            return f"{status} ({reason})" if status != "True" and reason else status
    return "Unknown"


def _reference(obj: Obj) -> str:
    ref = _dict(_dict(obj.get("spec")).get("scaleTargetRef"))
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _metric(spec: Mapping[str, Any], status: Mapping[str, Any] | None) -> str:
    """One metric of formatHPAMetrics: current/target."""
    kind = spec.get("type")
    field = {
        "External": "external",
        "Pods": "pods",
        "Object": "object",
        "Resource": "resource",
        "ContainerResource": "containerResource",
    }.get(str(kind))
    if field is None:
        return "<unknown type>"
    source, observed = _dict(spec.get(field)), _dict(_dict(status).get(field)) if status else {}
    target, current = _dict(source.get("target")), _dict(observed.get("current"))
    if field == "pods":
        return f"{current.get('averageValue', '0') if observed else UNKNOWN}/{target.get('averageValue', '0')}"
    if field in ("external", "object"):
        if target.get("averageValue") is not None:
            now = current.get("averageValue") if observed and current.get("averageValue") is not None else UNKNOWN
            return f"{now}/{target['averageValue']} (avg)"
        return f"{current.get('value', '0') if observed else UNKNOWN}/{target.get('value', '0')}"
    if target.get("averageValue") is not None:
        return f"{current.get('averageValue', '0') if observed else UNKNOWN}/{target['averageValue']}"
    utilization = current.get("averageUtilization")
    now = f"{utilization}%" if observed and utilization is not None else UNKNOWN
    wanted = f"{target['averageUtilization']}%" if target.get("averageUtilization") is not None else "<auto>"
    return f"{now}/{wanted}"


def _targets(obj: Obj) -> str:
    """formatHPAMetrics: each metric against the status metric at the same index."""
    specs = [_dict(m) for m in _list(_dict(obj.get("spec")).get("metrics"))]
    statuses = [_dict(m) for m in _list(_dict(obj.get("status")).get("currentMetrics"))]
    if not specs:
        return "<none>"
    cells = [_metric(spec, statuses[i] if i < len(statuses) else None) for i, spec in enumerate(specs)]
    if len(cells) > MAX_METRICS:
        return f"{', '.join(cells[:MAX_METRICS])} + {len(cells) - MAX_METRICS} more..."
    return ", ".join(cells)


def _min_pods(obj: Obj) -> str:
    minimum = _dict(obj.get("spec")).get("minReplicas")
    return str(minimum) if isinstance(minimum, int) else "<unset>"


def _max_pods(obj: Obj) -> int:
    maximum = _dict(obj.get("spec")).get("maxReplicas")
    return maximum if isinstance(maximum, int) else 0


def _replicas(obj: Obj) -> int:
    replicas = _dict(obj.get("status")).get("currentReplicas")
    return replicas if isinstance(replicas, int) else 0


WEBHOOK_COLUMNS = (NAME, Column("Webhooks", "integer", WEBHOOKS_DESCRIPTION, _webhooks), AGE)
API_SERVICE_COLUMNS = (
    NAME,
    Column("Service", "string", SERVICE_DESCRIPTION, _service),
    Column("Available", "string", AVAILABLE_DESCRIPTION, _available),
    AGE,
)
HPA_COLUMNS = (
    NAME,
    Column("Reference", "string", HPA_REFERENCE_DESCRIPTION, _reference),
    Column("Targets", "string", HPA_TARGETS_DESCRIPTION, _targets),
    Column("MinPods", "string", HPA_MIN_PODS_DESCRIPTION, _min_pods),
    Column("MaxPods", "string", HPA_MAX_PODS_DESCRIPTION, _max_pods),
    Column("Replicas", "string", HPA_REPLICAS_DESCRIPTION, _replicas),
    AGE,
)

COLUMNS: Mapping[tuple[str, str], tuple[Column, ...]] = {
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): WEBHOOK_COLUMNS,
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): WEBHOOK_COLUMNS,
    ("apiregistration.k8s.io", "apiservices"): API_SERVICE_COLUMNS,
    ("autoscaling", "horizontalpodautoscalers"): HPA_COLUMNS,
}
