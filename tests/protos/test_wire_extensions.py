"""Golden bytes and field numbers for admissionregistration.k8s.io/v1, apiregistration.k8s.io/v1 and autoscaling
v1/v2.

Every expectation is written by hand from upstream's protobuf tags (k8s.io/api admissionregistration/v1 and
autoscaling/v1, v2 generated.proto; k8s.io/kube-aggregator apiregistration/v1 generated.proto), never derived from
our descriptors: a renumbered or renamed field fails here. Note the gaps upstream left: APIServiceSpec has no 6,
MetricSpec and MetricStatus no 6, and HPAScalingRules numbers stabilizationWindowSeconds 3 ahead of 1 and 2.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from capstan.api.admissionregistration.v1 import admissionregistration_pb2 as admission
from capstan.api.apiregistration.v1 import apiregistration_pb2 as apireg
from capstan.api.autoscaling.v1 import autoscaling_pb2 as autoscaling_v1
from capstan.api.autoscaling.v2 import autoscaling_v2_pb2 as autoscaling_v2
from capstan.api.meta.v1 import meta_pb2 as meta
from capstan.api.resource import resource_pb2 as resource
from tests.protos.test_wire import entry, int_field, label, len_field


def serialize(msg: Message) -> bytes:
    return msg.SerializeToString(deterministic=True)


def validating() -> admission.ValidatingWebhookConfiguration:
    return admission.ValidatingWebhookConfiguration(
        metadata=meta.ObjectMeta(name="check"),
        webhooks=[admission.ValidatingWebhook(
            name="check.example.com",
            clientConfig=admission.WebhookClientConfig(
                service=admission.ServiceReference(namespace="ns", name="svc", path="/v", port=443), caBundle=b"CA"),
            rules=[admission.RuleWithOperations(operations=["CREATE"], rule=admission.Rule(
                apiGroups=[""], apiVersions=["v1"], resources=["pods"], scope="*"))],
            failurePolicy="Fail", namespaceSelector=meta.LabelSelector(matchLabels={"a": "b"}), sideEffects="None",
            timeoutSeconds=10, admissionReviewVersions=["v1"], matchPolicy="Equivalent",
            objectSelector=meta.LabelSelector(matchLabels={"c": "d"}),
            matchConditions=[admission.MatchCondition(name="m", expression="true")],
        )],
    )


VALIDATING = (
    len_field(1, len_field(1, "check"))
    + len_field(2, len_field(1, "check.example.com")
                + len_field(2, len_field(1, len_field(1, "ns") + len_field(2, "svc") + len_field(3, "/v")
                                         + int_field(4, 443)) + len_field(2, "CA"))
                + len_field(3, len_field(1, "CREATE") + len_field(2, len_field(1, "") + len_field(2, "v1")
                                                                  + len_field(3, "pods") + len_field(4, "*")))
                + len_field(4, "Fail")
                + len_field(5, entry(1, "a", "b"))
                + len_field(6, "None")
                + int_field(7, 10)
                + len_field(8, "v1")
                + len_field(9, "Equivalent")
                + len_field(10, entry(1, "c", "d"))
                + len_field(11, len_field(1, "m") + len_field(2, "true")))
)


def mutating() -> admission.MutatingWebhookConfiguration:
    return admission.MutatingWebhookConfiguration(
        metadata=meta.ObjectMeta(name="inject"),
        webhooks=[admission.MutatingWebhook(
            name="inject.example.com", clientConfig=admission.WebhookClientConfig(url="https://hook"),
            reinvocationPolicy="IfNeeded", objectSelector=meta.LabelSelector(matchLabels={"c": "d"}),
            matchConditions=[admission.MatchCondition(name="m", expression="true")],
        )],
    )


MUTATING = (
    len_field(1, len_field(1, "inject"))
    + len_field(2, len_field(1, "inject.example.com") + len_field(2, len_field(3, "https://hook"))
                + len_field(10, "IfNeeded") + len_field(11, entry(1, "c", "d"))
                + len_field(12, len_field(1, "m") + len_field(2, "true")))
)


def api_service() -> apireg.APIService:
    return apireg.APIService(
        metadata=meta.ObjectMeta(name="v1beta1.metrics.k8s.io"),
        spec=apireg.APIServiceSpec(
            service=apireg.ServiceReference(namespace="kube-system", name="metrics", port=443),
            group="metrics.k8s.io", version="v1beta1", insecureSkipTLSVerify=True, caBundle=b"CA",
            groupPriorityMinimum=100, versionPriority=100),
        status=apireg.APIServiceStatus(conditions=[apireg.APIServiceCondition(
            type="Available", status="False", reason="MissingEndpoints", message="no endpoints")]),
    )


API_SERVICE = (
    len_field(1, len_field(1, "v1beta1.metrics.k8s.io"))
    + len_field(2, len_field(1, len_field(1, "kube-system") + len_field(2, "metrics") + int_field(3, 443))
                + len_field(2, "metrics.k8s.io") + len_field(3, "v1beta1") + int_field(4, 1) + len_field(5, "CA")
                + int_field(7, 100) + int_field(8, 100))
    + len_field(3, len_field(1, len_field(1, "Available") + len_field(2, "False") + len_field(4, "MissingEndpoints")
                             + len_field(5, "no endpoints")))
)

REF = autoscaling_v2.CrossVersionObjectReference(kind="Deployment", name="web", apiVersion="apps/v1")
REF_BYTES = len_field(1, "Deployment") + len_field(2, "web") + len_field(3, "apps/v1")


def hpa_v2() -> autoscaling_v2.HorizontalPodAutoscaler:
    return autoscaling_v2.HorizontalPodAutoscaler(
        metadata=meta.ObjectMeta(name="web", namespace="default"),
        spec=autoscaling_v2.HorizontalPodAutoscalerSpec(
            scaleTargetRef=REF, minReplicas=1, maxReplicas=5,
            metrics=[
                autoscaling_v2.MetricSpec(type="Resource", resource=autoscaling_v2.ResourceMetricSource(
                    name="cpu", target=autoscaling_v2.MetricTarget(type="Utilization", averageUtilization=80))),
                autoscaling_v2.MetricSpec(type="ContainerResource",
                                          containerResource=autoscaling_v2.ContainerResourceMetricSource(
                    name="memory", container="app", target=autoscaling_v2.MetricTarget(
                        type="AverageValue", averageValue=resource.Quantity(string="1Gi")))),
            ],
            behavior=autoscaling_v2.HorizontalPodAutoscalerBehavior(scaleDown=autoscaling_v2.HPAScalingRules(
                stabilizationWindowSeconds=300, selectPolicy="Max",
                policies=[autoscaling_v2.HPAScalingPolicy(type="Percent", value=100, periodSeconds=15)])),
        ),
        status=autoscaling_v2.HorizontalPodAutoscalerStatus(
            observedGeneration=2, currentReplicas=1, desiredReplicas=2,
            currentMetrics=[autoscaling_v2.MetricStatus(type="Resource", resource=autoscaling_v2.ResourceMetricStatus(
                name="cpu", current=autoscaling_v2.MetricValueStatus(averageUtilization=90)))],
            conditions=[autoscaling_v2.HorizontalPodAutoscalerCondition(
                type="AbleToScale", status="True", reason="ReadyForNewScale")],
        ),
    )


HPA_V2 = (
    len_field(1, len_field(1, "web") + len_field(3, "default"))
    + len_field(2, len_field(1, REF_BYTES) + int_field(2, 1) + int_field(3, 5)
                + len_field(4, len_field(1, "Resource") + len_field(4, len_field(1, "cpu") + len_field(
                    2, len_field(1, "Utilization") + int_field(4, 80))))
                + len_field(4, len_field(1, "ContainerResource") + len_field(7, len_field(1, "memory") + len_field(
                    2, len_field(1, "AverageValue") + len_field(3, len_field(1, "1Gi"))) + len_field(3, "app")))
                + len_field(5, len_field(2, len_field(1, "Max") + len_field(
                    2, len_field(1, "Percent") + int_field(2, 100) + int_field(3, 15)) + int_field(3, 300))))
    + len_field(3, int_field(1, 2) + int_field(3, 1) + int_field(4, 2)
                + len_field(5, len_field(1, "Resource") + len_field(4, len_field(1, "cpu") + len_field(
                    2, int_field(3, 90))))
                + len_field(6, len_field(1, "AbleToScale") + len_field(2, "True") + len_field(4, "ReadyForNewScale")))
)


def hpa_v1() -> autoscaling_v1.HorizontalPodAutoscaler:
    return autoscaling_v1.HorizontalPodAutoscaler(
        metadata=meta.ObjectMeta(name="web", namespace="default"),
        spec=autoscaling_v1.HorizontalPodAutoscalerSpec(
            scaleTargetRef=autoscaling_v1.CrossVersionObjectReference(kind="Deployment", name="web",
                                                                      apiVersion="apps/v1"),
            minReplicas=1, maxReplicas=5, targetCPUUtilizationPercentage=80),
        status=autoscaling_v1.HorizontalPodAutoscalerStatus(
            observedGeneration=2, currentReplicas=1, desiredReplicas=2, currentCPUUtilizationPercentage=90),
    )


HPA_V1 = (
    len_field(1, len_field(1, "web") + len_field(3, "default"))
    + len_field(2, len_field(1, REF_BYTES) + int_field(2, 1) + int_field(3, 5) + int_field(4, 80))
    + len_field(3, int_field(1, 2) + int_field(3, 1) + int_field(4, 2) + int_field(5, 90))
)

GOLDEN = [
    ("ValidatingWebhookConfiguration", validating, VALIDATING),
    ("MutatingWebhookConfiguration", mutating, MUTATING),
    ("APIService", api_service, API_SERVICE),
    ("HorizontalPodAutoscaler v2", hpa_v2, HPA_V2),
    ("HorizontalPodAutoscaler v1", hpa_v1, HPA_V1),
]


@pytest.mark.parametrize(("build", "golden"), [pytest.param(b, g, id=i) for i, b, g in GOLDEN])
def test_kind_encodes_to_upstream_bytes(build: Any, golden: bytes) -> None:
    assert serialize(build()) == golden


@pytest.mark.parametrize(("build", "golden"), [pytest.param(b, g, id=i) for i, b, g in GOLDEN])
def test_kind_decodes_from_upstream_bytes_and_re_encodes_them(build: Any, golden: bytes) -> None:
    msg = type(build()).FromString(golden)
    assert msg == build()
    assert serialize(msg) == golden


WEBHOOK_COMMON = {"name": 1, "clientConfig": 2, "rules": 3, "failurePolicy": 4, "namespaceSelector": 5,
                  "sideEffects": 6, "timeoutSeconds": 7, "admissionReviewVersions": 8, "matchPolicy": 9}
METRIC_TYPES = {"type": 1, "object": 2, "pods": 3, "resource": 4, "external": 5, "containerResource": 7}

# fmt: off
FIELD_NUMBERS: list[tuple[type[Message], dict[str, int]]] = [
    (admission.ValidatingWebhookConfiguration, {"metadata": 1, "webhooks": 2}),
    (admission.ValidatingWebhookConfigurationList, {"metadata": 1, "items": 2}),
    (admission.MutatingWebhookConfiguration, {"metadata": 1, "webhooks": 2}),
    (admission.MutatingWebhookConfigurationList, {"metadata": 1, "items": 2}),
    (admission.ValidatingWebhook, {**WEBHOOK_COMMON, "objectSelector": 10, "matchConditions": 11}),
    (admission.MutatingWebhook, {**WEBHOOK_COMMON, "reinvocationPolicy": 10, "objectSelector": 11,
                                 "matchConditions": 12}),
    (admission.WebhookClientConfig, {"url": 3, "service": 1, "caBundle": 2}),
    (admission.ServiceReference, {"namespace": 1, "name": 2, "path": 3, "port": 4}),
    (admission.RuleWithOperations, {"operations": 1, "rule": 2}),
    (admission.Rule, {"apiGroups": 1, "apiVersions": 2, "resources": 3, "scope": 4}),
    (admission.MatchCondition, {"name": 1, "expression": 2}),
    (apireg.APIService, {"metadata": 1, "spec": 2, "status": 3}),
    (apireg.APIServiceList, {"metadata": 1, "items": 2}),
    (apireg.APIServiceSpec, {"service": 1, "group": 2, "version": 3, "insecureSkipTLSVerify": 4, "caBundle": 5,
                             "groupPriorityMinimum": 7, "versionPriority": 8}),
    (apireg.ServiceReference, {"namespace": 1, "name": 2, "port": 3}),
    (apireg.APIServiceStatus, {"conditions": 1}),
    (apireg.APIServiceCondition, {"type": 1, "status": 2, "lastTransitionTime": 3, "reason": 4, "message": 5}),
    (autoscaling_v1.HorizontalPodAutoscaler, {"metadata": 1, "spec": 2, "status": 3}),
    (autoscaling_v1.HorizontalPodAutoscalerList, {"metadata": 1, "items": 2}),
    (autoscaling_v1.HorizontalPodAutoscalerSpec, {"scaleTargetRef": 1, "minReplicas": 2, "maxReplicas": 3,
                                                  "targetCPUUtilizationPercentage": 4}),
    (autoscaling_v1.CrossVersionObjectReference, {"kind": 1, "name": 2, "apiVersion": 3}),
    (autoscaling_v1.HorizontalPodAutoscalerStatus, {"observedGeneration": 1, "lastScaleTime": 2,
                                                    "currentReplicas": 3, "desiredReplicas": 4,
                                                    "currentCPUUtilizationPercentage": 5}),
    (autoscaling_v2.HorizontalPodAutoscaler, {"metadata": 1, "spec": 2, "status": 3}),
    (autoscaling_v2.HorizontalPodAutoscalerList, {"metadata": 1, "items": 2}),
    (autoscaling_v2.HorizontalPodAutoscalerSpec, {"scaleTargetRef": 1, "minReplicas": 2, "maxReplicas": 3,
                                                  "metrics": 4, "behavior": 5}),
    (autoscaling_v2.CrossVersionObjectReference, {"kind": 1, "name": 2, "apiVersion": 3}),
    (autoscaling_v2.HorizontalPodAutoscalerBehavior, {"scaleUp": 1, "scaleDown": 2}),
    (autoscaling_v2.HPAScalingRules, {"stabilizationWindowSeconds": 3, "selectPolicy": 1, "policies": 2}),
    (autoscaling_v2.HPAScalingPolicy, {"type": 1, "value": 2, "periodSeconds": 3}),
    (autoscaling_v2.MetricSpec, METRIC_TYPES),
    (autoscaling_v2.MetricStatus, METRIC_TYPES),
    (autoscaling_v2.ObjectMetricSource, {"describedObject": 1, "target": 2, "metric": 3}),
    (autoscaling_v2.PodsMetricSource, {"metric": 1, "target": 2}),
    (autoscaling_v2.ResourceMetricSource, {"name": 1, "target": 2}),
    (autoscaling_v2.ContainerResourceMetricSource, {"name": 1, "target": 2, "container": 3}),
    (autoscaling_v2.ExternalMetricSource, {"metric": 1, "target": 2}),
    (autoscaling_v2.MetricIdentifier, {"name": 1, "selector": 2}),
    (autoscaling_v2.MetricTarget, {"type": 1, "value": 2, "averageValue": 3, "averageUtilization": 4}),
    (autoscaling_v2.HorizontalPodAutoscalerStatus, {"observedGeneration": 1, "lastScaleTime": 2,
                                                    "currentReplicas": 3, "desiredReplicas": 4,
                                                    "currentMetrics": 5, "conditions": 6}),
    (autoscaling_v2.ObjectMetricStatus, {"metric": 1, "current": 2, "describedObject": 3}),
    (autoscaling_v2.PodsMetricStatus, {"metric": 1, "current": 2}),
    (autoscaling_v2.ResourceMetricStatus, {"name": 1, "current": 2}),
    (autoscaling_v2.ContainerResourceMetricStatus, {"name": 1, "current": 2, "container": 3}),
    (autoscaling_v2.ExternalMetricStatus, {"metric": 1, "current": 2}),
    (autoscaling_v2.MetricValueStatus, {"value": 1, "averageValue": 2, "averageUtilization": 3}),
    (autoscaling_v2.HorizontalPodAutoscalerCondition, {"type": 1, "status": 2, "lastTransitionTime": 3,
                                                       "reason": 4, "message": 5}),
]
# fmt: on


@pytest.mark.parametrize(("message", "numbers"), [pytest.param(*c, id=label(c[0])) for c in FIELD_NUMBERS])
def test_every_field_has_upstream_name_and_number(message: type[Message], numbers: dict[str, int]) -> None:
    assert {f.name: f.number for f in message.DESCRIPTOR.fields} == numbers


@pytest.mark.parametrize("message", [
    admission.ValidatingWebhookConfiguration, apireg.APIService, autoscaling_v1.HorizontalPodAutoscaler,
    autoscaling_v2.HorizontalPodAutoscaler,
], ids=label)
def test_messages_live_in_upstream_packages(message: type[Message]) -> None:
    """The envelope names kinds by Go package; a message in the wrong proto package breaks client-go's decoding."""
    package = {
        admission.ValidatingWebhookConfiguration: "k8s.io.api.admissionregistration.v1",
        apireg.APIService: "k8s.io.kube_aggregator.pkg.apis.apiregistration.v1",
        autoscaling_v1.HorizontalPodAutoscaler: "k8s.io.api.autoscaling.v1",
        autoscaling_v2.HorizontalPodAutoscaler: "k8s.io.api.autoscaling.v2",
    }[message]
    assert message.DESCRIPTOR.full_name == f"{package}.{message.__name__}"
