"""Table columns of the webhook configurations, APIServices and HorizontalPodAutoscalers
(server/registry/printing/extension_kinds.py) against kube-apiserver 1.28: printers.go's headers with their types and
descriptions (HPA's from autoscaling/v2's field docs), kube-aggregator's APIService columns, and the cells,
formatHPAMetrics' TARGETS included."""

from __future__ import annotations

from typing import Any

import pytest

from server.kinds.admissionregistration import MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS
from server.kinds.apiregistration import API_SERVICES
from server.kinds.autoscaling import HORIZONTAL_POD_AUTOSCALERS_V1, HORIZONTAL_POD_AUTOSCALERS_V2
from server.machinery.values import Obj
from server.registry.printing import columns_for
from server.registry.resources import Resource
from tests.server.registry.printing.test_corev1_kinds import cells

WEBHOOK_HEADERS = [("Name", "string", "name"), ("Webhooks", "integer", ""), ("Age", "string", "")]
HPA_HEADERS = [("Name", "string", "name"), ("Reference", "string", ""), ("Targets", "string", ""),
               ("MinPods", "string", ""), ("MaxPods", "string", ""), ("Replicas", "string", ""),
               ("Age", "string", "")]
HEADERS = [
    (VALIDATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_HEADERS),
    (MUTATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_HEADERS),
    (API_SERVICES, [("Name", "string", "name"), ("Service", "string", ""), ("Available", "string", ""),
                    ("Age", "string", "")]),
    (HORIZONTAL_POD_AUTOSCALERS_V2, HPA_HEADERS),
    (HORIZONTAL_POD_AUTOSCALERS_V1, HPA_HEADERS),
]


@pytest.mark.parametrize(("resource", "expected"),
                         [pytest.param(r, e, id=f"{r.resource}.{r.version}") for r, e in HEADERS])
def test_headers(resource: Resource, expected: list[tuple[str, str, str]]) -> None:
    assert [(c.name, c.type, c.format) for c in columns_for(resource)] == expected


# autoscaling/v2 HorizontalPodAutoscalerSpec/Status SwaggerDoc, as printers.go takes them.
HPA_DESCRIPTIONS = {
    "Reference": "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics "
                 "should be collected, as well as to actually change the replica count.",
    "MinPods": "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It "
               "defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled "
               "and at least one Object or External metric is configured.  Scaling is active as long as at least one "
               "metric value is available.",
    "MaxPods": "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It "
               "cannot be less that minReplicas.",
    "Replicas": "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the "
                "autoscaler.",
}


def test_hpa_descriptions_are_autoscaling_v2_field_docs() -> None:
    described = {c.name: c.description for c in columns_for(HORIZONTAL_POD_AUTOSCALERS_V2)}
    assert {k: described[k] for k in HPA_DESCRIPTIONS} == HPA_DESCRIPTIONS
    assert described["Targets"].startswith("metrics contains the specifications for which to use to calculate")
    assert described["Targets"].endswith("about how each type of metric must respond.")  # 1.28's text


def test_webhook_description() -> None:
    [_, webhooks, _] = columns_for(VALIDATING_WEBHOOK_CONFIGURATIONS)
    assert webhooks.description == "Webhooks indicates the number of webhooks registered in this configuration"


def hpa(spec: Obj, status: Obj | None = None) -> Obj:
    base: Obj = {"metadata": {"name": "web"},
                 "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5, **spec}}
    return {**base, "status": status} if status is not None else base


def cpu(target: Obj) -> Obj:
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


UTIL_80 = cpu({"type": "Utilization", "averageUtilization": 80})
PODS_QPS = {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue",
                                                                           "averageValue": "10"}}}
EXTERNAL_AVG = {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "AverageValue",
                                                                                      "averageValue": "30"}}}
OBJECT_VALUE = {"type": "Object", "object": {"metric": {"name": "hits"}, "describedObject": {"kind": "Service",
                                                                                            "name": "s"},
                                             "target": {"type": "Value", "value": "2k"}}}


@pytest.mark.parametrize(("resource", "obj", "expected"), [
    pytest.param(VALIDATING_WEBHOOK_CONFIGURATIONS, {"metadata": {"name": "v"}, "webhooks": [{"name": "a"},
                                                                                             {"name": "b"}]},
                 ["v", 2, "60m"], id="validating"),
    pytest.param(MUTATING_WEBHOOK_CONFIGURATIONS, {"metadata": {"name": "m"}}, ["m", 0, "60m"], id="mutating none"),
    pytest.param(API_SERVICES, {"metadata": {"name": "v1.apps"}, "spec": {"group": "apps", "version": "v1"},
                                "status": {"conditions": [{"type": "Available", "status": "True",
                                                           "reason": "Local"}]}},
                 ["v1.apps", "Local", "True", "60m"], id="apiservice local"),
    pytest.param(API_SERVICES, {"metadata": {"name": "v1beta1.metrics.k8s.io"},
                                "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
                                "status": {"conditions": [{"type": "Available", "status": "False",
                                                           "reason": "MissingEndpoints"}]}},
                 ["v1beta1.metrics.k8s.io", "kube-system/metrics-server", "False (MissingEndpoints)", "60m"],
                 id="apiservice unavailable"),
    pytest.param(API_SERVICES, {"metadata": {"name": "v1.x"}, "spec": {}}, ["v1.x", "Local", "Unknown", "60m"],
                 id="apiservice no condition"),
    pytest.param(HORIZONTAL_POD_AUTOSCALERS_V2, hpa({"minReplicas": 1, "metrics": [UTIL_80]}),
                 ["web", "Deployment/web", "<unknown>/80%", "1", 5, 0, "60m"], id="hpa unobserved"),
    pytest.param(HORIZONTAL_POD_AUTOSCALERS_V2, hpa(
        {"minReplicas": 2, "metrics": [UTIL_80]},
        {"currentReplicas": 3, "desiredReplicas": 3,
         "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 42}}}]}),
        ["web", "Deployment/web", "42%/80%", "2", 5, 3, "60m"], id="hpa observed"),
    pytest.param(HORIZONTAL_POD_AUTOSCALERS_V2, hpa({}), ["web", "Deployment/web", "<none>", "<unset>", 5, 0, "60m"],
                 id="hpa no metrics"),
    pytest.param(HORIZONTAL_POD_AUTOSCALERS_V2, hpa({"metrics": [cpu({"type": "Utilization"})]}),
                 ["web", "Deployment/web", "<unknown>/<auto>", "<unset>", 5, 0, "60m"], id="hpa auto target"),
    pytest.param(HORIZONTAL_POD_AUTOSCALERS_V2, hpa({"metrics": [cpu({"type": "AverageValue",
                                                                      "averageValue": "500m"})]}),
                 ["web", "Deployment/web", "<unknown>/500m", "<unset>", 5, 0, "60m"], id="hpa average value"),
    pytest.param(HORIZONTAL_POD_AUTOSCALERS_V2, hpa(
        {"metrics": [PODS_QPS, EXTERNAL_AVG]},
        {"currentMetrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "7"}}}]}),
        ["web", "Deployment/web", "7/10, <unknown>/30 (avg)", "<unset>", 5, 0, "60m"], id="hpa pods and external"),
    pytest.param(HORIZONTAL_POD_AUTOSCALERS_V2, hpa({"metrics": [OBJECT_VALUE, UTIL_80, PODS_QPS, EXTERNAL_AVG]}),
                 ["web", "Deployment/web", "<unknown>/2k, <unknown>/80% + 2 more...", "<unset>", 5, 0, "60m"],
                 id="hpa two then more"),
])
def test_cells(resource: Resource, obj: Obj, expected: list[Any]) -> None:
    assert cells(resource, obj) == expected
