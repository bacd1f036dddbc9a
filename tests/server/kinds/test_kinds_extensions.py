"""admissionregistration.k8s.io/v1 webhook configurations, apiregistration.k8s.io/v1 APIServices and
autoscaling/v2 (and v1) HorizontalPodAutoscalers through the CoreService: kube-apiserver 1.28's defaults and
validation Statuses, the Local APIServices of every served group version following CRDs, and an autoscaler written
through one version and read through the other with kube's annotations.
Expected answers are kube's: pkg/apis/admissionregistration/{v1/defaults.go,validation}, kube-aggregator's
validation and cmd/kube-apiserver/app/aggregator.go, pkg/apis/autoscaling/{v1/conversion.go,v2/defaults.go,
validation}.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.apiservices import APIServiceController
from server.startup.app import RunningCore
from tests.server import kube
from tests.server.client import Client, Obj, path, refused

NS = "default"
ADMISSION, APIREG, AUTOSCALING = "admissionregistration.k8s.io", "apiregistration.k8s.io", "autoscaling"
HOOK = {
    "name": "check.example.com",
    "sideEffects": "None",
    "admissionReviewVersions": ["v1"],
    "clientConfig": {"service": {"namespace": "default", "name": "hook"}},
    "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
}
HPA_SPEC = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5}
# The group, version, kind and a minimal valid body (without metadata) of every kind.
KINDS: dict[str, tuple[str, str, str, Obj]] = {
    "validatingwebhookconfigurations": (ADMISSION, "v1", "ValidatingWebhookConfiguration", {"webhooks": [HOOK]}),
    "mutatingwebhookconfigurations": (ADMISSION, "v1", "MutatingWebhookConfiguration", {"webhooks": [HOOK]}),
    "apiservices": (
        APIREG,
        "v1",
        "APIService",
        {
            "spec": {
                "group": "metrics.example.com",
                "version": "v1",
                "groupPriorityMinimum": 100,
                "versionPriority": 10,
                "service": {"namespace": "default", "name": "metrics"},
            }
        },
    ),
    "horizontalpodautoscalers": (AUTOSCALING, "v2", "HorizontalPodAutoscaler", {"spec": HPA_SPEC}),
}
NAMES = {"apiservices": "v1.metrics.example.com"}


def at(resource: str, name: str = "", subresource: str = "", version: str = "") -> core_pb2.ResourcePath:
    group, default_version, _, _ = KINDS[resource]
    namespace = NS if resource == "horizontalpodautoscalers" else ""
    p = path(resource, namespace, name, group=group, subresource=subresource)
    p.version = version or default_version
    return p


def body(resource: str, name: str = "", version: str = "", **top: Any) -> Obj:
    group, default_version, kind, base = KINDS[resource]
    obj: Obj = {
        "apiVersion": f"{group}/{version or default_version}",
        "kind": kind,
        "metadata": {"name": name or NAMES.get(resource, "web")},
        **copy.deepcopy(base),
    }
    obj.update(top)
    return obj


def invalid(field: str, rendered: str, detail: str) -> Obj:
    return kube.cause("FieldValueInvalid", f"Invalid value: {rendered}: {detail}", field)


# ---------------------------------------------------------------- CRUD, every kind


@pytest.mark.parametrize("resource", list(KINDS))
async def test_create_get_update_delete(client: Client, resource: str) -> None:
    created = await client.create(at(resource), body(resource))
    name = created["metadata"]["name"]
    if resource == "apiservices":
        created = await _checked(client, name)
    assert await client.get(at(resource, name)) == created
    labeled = copy.deepcopy(created)
    labeled["metadata"]["labels"] = {"tier": "front"}
    updated, _ = await client.update(at(resource, name), labeled)
    assert updated["metadata"]["labels"] == {"tier": "front"}
    assert (await client.delete(at(resource, name)))["status"] == "Success"


# ---------------------------------------------------------------- webhook configurations


@pytest.mark.parametrize("resource", ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"])
async def test_webhooks_get_kubes_defaults(client: Client, resource: str) -> None:
    [hook] = (await client.create(at(resource), body(resource)))["webhooks"]
    assert hook["failurePolicy"] == "Fail"
    assert hook["matchPolicy"] == "Equivalent"
    assert (hook["namespaceSelector"], hook["objectSelector"]) == ({}, {})
    assert hook["timeoutSeconds"] == 10
    assert hook["rules"][0]["scope"] == "*"
    assert hook["clientConfig"]["service"]["port"] == 443
    assert hook.get("reinvocationPolicy") == ("Never" if resource.startswith("mutating") else None)


@pytest.mark.parametrize(
    ("change", "causes"),
    [
        pytest.param(
            {"sideEffects": None},
            [
                kube.cause(
                    "FieldValueRequired",
                    "Required value: must specify one of None, NoneOnDryRun",
                    "webhooks[0].sideEffects",
                )
            ],
            id="sideEffects",
        ),
        pytest.param(
            {"admissionReviewVersions": []},
            [
                kube.cause(
                    "FieldValueRequired",
                    "Required value: must specify one of v1, v1beta1",
                    "webhooks[0].admissionReviewVersions",
                )
            ],
            id="admissionReviewVersions",
        ),
        pytest.param(
            {"timeoutSeconds": 31},
            [invalid("webhooks[0].timeoutSeconds", "31", "the timeout value must be between 1 and 30 seconds")],
            id="timeout",
        ),
        pytest.param(
            {"name": "check"},
            [
                invalid(
                    "webhooks[0].name", '"check"', "should be a domain with at least three segments separated by dots"
                )
            ],
            id="name",
        ),
        pytest.param(
            {"clientConfig": {}},
            [
                kube.cause(
                    "FieldValueRequired",
                    "Required value: exactly one of url or service is required",
                    "webhooks[0].clientConfig",
                )
            ],
            id="clientConfig",
        ),
        pytest.param(
            {"clientConfig": {"url": "http://hook.example.com/x"}},
            [invalid("webhooks[0].clientConfig.url", '"http"',
                     "'https' is the only allowed URL scheme; desired format: https://host[/path]")],
            id="url",
        ),
        pytest.param(
            {"failurePolicy": "Sometimes"},
            [
                kube.cause(
                    "FieldValueNotSupported",
                    'Unsupported value: "Sometimes": supported values: "Fail", "Ignore"',
                    "webhooks[0].failurePolicy",
                )
            ],
            id="failurePolicy",
        ),
        pytest.param(
            {
                "rules": [
                    {
                        "operations": ["*", "CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["*/*", "pods"],
                    }
                ]
            },
            [
                invalid(
                    "webhooks[0].rules[0].operations",
                    '[]admissionregistration.OperationType{"*", "CREATE"}',
                    "if '*' is present, must not specify other operations",
                ),
                invalid(
                    "webhooks[0].rules[0].resources",
                    '[]string{"*/*", "pods"}',
                    "if '*/*' is present, must not specify other resources",
                ),
            ],
            id="rules",
        ),
    ],
)
async def test_webhook_configuration_validation(client: Client, change: Obj, causes: list[Obj]) -> None:
    hook = {k: v for k, v in {**HOOK, **change}.items() if v is not None}
    failed = await refused(
        client.create(at("validatingwebhookconfigurations"), body("validatingwebhookconfigurations", webhooks=[hook]))
    )
    assert failed.status == kube.invalid("ValidatingWebhookConfiguration", "web", causes, group=ADMISSION)


async def test_duplicate_webhook_names_are_refused(client: Client) -> None:
    failed = await refused(
        client.create(at("mutatingwebhookconfigurations"), body("mutatingwebhookconfigurations", webhooks=[HOOK, HOOK]))
    )
    assert failed.status == kube.invalid(
        "MutatingWebhookConfiguration",
        "web",
        [kube.cause("FieldValueDuplicate", 'Duplicate value: "check.example.com"', "webhooks[1].name")],
        group=ADMISSION,
    )


# ---------------------------------------------------------------- APIServices


async def test_every_served_group_version_has_an_available_local_apiservice(client: Client) -> None:
    _, items = await client.list(at("apiservices"))
    by_name = {o["metadata"]["name"]: o for o in items}
    assert by_name["v1."]["spec"] == {"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}
    assert by_name["v1.apps"]["spec"] == {
        "group": "apps",
        "version": "v1",
        "groupPriorityMinimum": 17800,
        "versionPriority": 15,
    }
    assert by_name["v2.autoscaling"]["spec"]["versionPriority"] == 30
    assert "v1.apiregistration.k8s.io" not in by_name  # kube's apiVersionPriorities does not name the group
    for name in ("v1.", "v1.apps", "v1.authentication.k8s.io", "v1.autoscaling", "v1.admissionregistration.k8s.io"):
        [condition] = by_name[name]["status"]["conditions"]
        assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
            "type": "Available",
            "status": "True",
            "reason": "Local",
            "message": "Local APIServices are always available",
        }


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}


async def _checked(client: Client, name: str) -> Obj:
    """The APIService once the availability controller (server/controllers/aggregation.py) has written its
    Available condition, as kube's writes it for an APIService with a service: then nothing else writes it."""
    for _ in range(100):
        obj = await client.get(at("apiservices", name))
        if any(c.get("type") == "Available" for c in (obj.get("status") or {}).get("conditions") or []):
            return obj
        await asyncio.sleep(0.1)
    raise AssertionError("never checked")


async def _eventually(check: Any) -> None:
    for _ in range(100):
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("never")


async def test_apiservices_follow_crds(client: Client) -> None:
    crds = path("customresourcedefinitions", "", group="apiextensions.k8s.io")

    async def names() -> set[str]:
        return {o["metadata"]["name"] for o in (await client.list(at("apiservices")))[1]}

    await client.create(crds, CRD)

    async def present() -> bool:
        return "v1.example.com" in await names()

    await _eventually(present)
    service = await client.get(at("apiservices", "v1.example.com"))
    assert service["spec"] == {
        "group": "example.com",
        "version": "v1",
        "groupPriorityMinimum": 1000,
        "versionPriority": 100,
    }
    assert service["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "true"}
    await client.delete(path("customresourcedefinitions", "", "widgets.example.com", group="apiextensions.k8s.io"))

    async def gone() -> bool:
        return "v1.example.com" not in await names()

    await _eventually(gone)


async def test_a_users_apiservice_is_kept_and_a_sync_is_idempotent(client: Client, running: RunningCore) -> None:
    await client.create(at("apiservices"), body("apiservices"))
    await _checked(client, "v1.metrics.example.com")

    async def versions() -> dict[str, str]:  # the APIServices' own: other controllers write other kinds meanwhile
        _, items = await client.list(at("apiservices"))
        return {item["metadata"]["name"]: item["metadata"]["resourceVersion"] for item in items}

    before = await versions()
    await APIServiceController(running.core).sync()
    assert await versions() == before
    assert (await client.get(at("apiservices", "v1.metrics.example.com")))["spec"]["service"]["port"] == 443


@pytest.mark.parametrize(
    ("spec", "causes"),
    [
        pytest.param(
            {"groupPriorityMinimum": 0},
            [invalid("spec.groupPriorityMinimum", "0", "must be positive and less than 20000")],
            id="groupPriorityMinimum",
        ),
        pytest.param(
            {"versionPriority": 1001},
            [invalid("spec.versionPriority", "1001", "must be positive and less than 1000")],
            id="versionPriority",
        ),
        pytest.param(
            {"version": "v2"},
            [
                invalid(
                    "metadata.name",
                    '"v1.metrics.example.com"',
                    'must be `spec.version+"."+spec.group`: "v2.metrics.example.com"',
                )
            ],
            id="name",
        ),
    ],
)
async def test_apiservice_validation(client: Client, spec: Obj, causes: list[Obj]) -> None:
    obj = body("apiservices")
    obj["spec"].update(spec)
    failed = await refused(client.create(at("apiservices"), obj))
    assert failed.status == kube.invalid("APIService", "v1.metrics.example.com", causes, group=APIREG)


# ---------------------------------------------------------------- HorizontalPodAutoscalers


async def test_v2_defaults(client: Client) -> None:
    spec = {**HPA_SPEC, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}
    created = await client.create(at("horizontalpodautoscalers"), body("horizontalpodautoscalers", spec=spec))
    assert created["spec"]["minReplicas"] == 1
    assert created["spec"]["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
    ]
    assert created["spec"]["behavior"] == {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": 60,
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
    }


@pytest.mark.parametrize(
    ("spec", "causes"),
    [
        pytest.param(
            {"minReplicas": 0},
            [invalid("spec.minReplicas", "0", "must be greater than or equal to 1"),
             kube.cause("FieldValueForbidden", "Forbidden: must specify at least one Object or External metric to "
                        "support scaling to zero replicas", "spec.metrics")],
            id="minReplicas",
        ),
        pytest.param(
            {"minReplicas": 6},
            [invalid("spec.maxReplicas", "5", "must be greater than or equal to `minReplicas`")],
            id="maxReplicas",
        ),
        pytest.param(
            {"scaleTargetRef": {"kind": "Deployment"}},
            [kube.cause("FieldValueRequired", "Required value", "spec.scaleTargetRef.name")],
            id="scaleTargetRef",
        ),
        pytest.param(
            {"metrics": [{"type": "Pods"}]},
            [
                kube.cause(
                    "FieldValueRequired",
                    "Required value: must populate information for the given metric source",
                    "spec.metrics[0].pods",
                )
            ],
            id="metric source",
        ),
        pytest.param(
            {"behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 15}]}}},
            [invalid("spec.behavior.scaleUp.policies[0].value", "0", "must be greater than zero")],
            id="behavior",
        ),
    ],
)
async def test_hpa_validation(client: Client, spec: Obj, causes: list[Obj]) -> None:
    failed = await refused(
        client.create(at("horizontalpodautoscalers"), body("horizontalpodautoscalers", spec={**HPA_SPEC, **spec}))
    )
    assert failed.status == kube.invalid("HorizontalPodAutoscaler", "web", causes, group=AUTOSCALING)


async def test_hpa_created_through_v1_reads_through_v2_and_back(client: Client) -> None:
    v1 = body("horizontalpodautoscalers", version="v1", spec={**HPA_SPEC, "targetCPUUtilizationPercentage": 50})
    created = await client.create(at("horizontalpodautoscalers", version="v1"), v1)
    assert created["spec"] == {**HPA_SPEC, "minReplicas": 1, "targetCPUUtilizationPercentage": 50}
    assert created["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    v2 = await client.get(at("horizontalpodautoscalers", "web"))
    assert (v2["apiVersion"], v2["spec"]["metrics"]) == (
        "autoscaling/v2",
        [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
            }
        ],
    )
    assert "annotations" not in v2["metadata"]
    assert await client.get(at("horizontalpodautoscalers", "web", version="v1")) == created


async def test_v2_metrics_and_behavior_travel_through_v1_in_kubes_annotations(client: Client) -> None:
    pods = {
        "type": "Pods",
        "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}},
    }
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}
    spec = {**HPA_SPEC, "metrics": [pods, cpu], "behavior": {"scaleUp": {"selectPolicy": "Min"}}}
    created = await client.create(at("horizontalpodautoscalers"), body("horizontalpodautoscalers", spec=spec))
    v1 = await client.get(at("horizontalpodautoscalers", "web", version="v1"))
    annotations = v1["metadata"]["annotations"]
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 70
    assert annotations["autoscaling.alpha.kubernetes.io/metrics"] == (
        '[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]'
    )
    assert json.loads(annotations["autoscaling.alpha.kubernetes.io/behavior"]) == {
        "ScaleUp": {
            "StabilizationWindowSeconds": 0,
            "SelectPolicy": "Min",
            "Policies": [
                {"Type": "Pods", "Value": 4, "PeriodSeconds": 15},
                {"Type": "Percent", "Value": 100, "PeriodSeconds": 15},
            ],
        },
        "ScaleDown": {
            "StabilizationWindowSeconds": None,
            "SelectPolicy": "Max",
            "Policies": [{"Type": "Percent", "Value": 100, "PeriodSeconds": 15}],
        },
    }
    v1["metadata"]["labels"] = {"via": "v1"}
    await client.update(at("horizontalpodautoscalers", "web", version="v1"), v1)
    after = await client.get(at("horizontalpodautoscalers", "web"))
    assert after["spec"] == created["spec"]
    assert "annotations" not in after["metadata"]


async def test_a_v1_annotation_that_is_not_json_is_a_bad_request(client: Client) -> None:
    v1 = body("horizontalpodautoscalers", version="v1", spec=HPA_SPEC)
    v1["metadata"]["annotations"] = {"autoscaling.alpha.kubernetes.io/metrics": "{"}
    failed = await refused(client.create(at("horizontalpodautoscalers", version="v1"), v1))
    assert failed.status["code"] == 400
