"""`matchPolicy: Equivalent` as kube-apiserver 1.28 applies it: a rule on one version matches a request to an
equivalent resource (the versions of a built-in kind, a resource stored as another, a CRD's served versions,
subresources likewise); the webhook gets the objects converted to the matched version (kind and resource the
matched ones, requestKind and requestResource the request's), and a mutating webhook's patch applies to the
converted object and comes back converted. `Exact` matches only the request's own version. Real HTTPS webhook
servers, a real core over gRPC."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from capstan.testing.webhooks import serve
from tests.server.admission.test_admission_webhooks import configure, webhook
from tests.server.client import Client, path
from tests.server.crd.test_crd_conversion import OPEN, conversion_crd, convert, widget
from tests.server.crd.test_crds import CRDS, GROUP, established

Obj = dict[str, Any]


def hpa_v2(name: str, cpu: int) -> Obj:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 5,
                     "metrics": [{"type": "Resource", "resource": {
                         "name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu}}}]}}


def flow_schema(name: str) -> Obj:
    return {"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema", "metadata": {"name": name},
            "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 9000}}


def core_event(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "Tested",
            "message": "hello", "type": "Normal", "source": {"component": "test"},
            "eventTime": "2024-01-01T00:00:00.000000Z", "reportingComponent": "test", "reportingInstance": "i",
            "action": "Test"}


def none_crd() -> Obj:
    versions = [{"name": name, "served": True, "storage": name == "v1", "schema": {"openAPIV3Schema": OPEN}}
                for name in ("v1", "v2")]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": versions}}


HPAS = ("autoscaling", "horizontalpodautoscalers")
# (case, rule (group, version, resource), matchPolicy, what is created: (group, version, resource, object),
#  crd: "" | "none" | "webhook", expected kind/version the webhook sees (None: not called), a check of its object)
CASES: list[tuple[str, tuple[str, str, str], str, tuple[str, str, str, Obj], str, tuple[str, str] | None,
                  Callable[[Obj], bool]]] = [
    ("hpa v2 request, v1 rule", ("autoscaling", "v1", "horizontalpodautoscalers"), "Equivalent",
     ("autoscaling", "v2", "horizontalpodautoscalers", hpa_v2("h", 60)), "", ("autoscaling/v1", "v2"),
     lambda o: o["spec"]["targetCPUUtilizationPercentage"] == 60 and "metrics" not in o["spec"]),
    ("hpa, Exact", ("autoscaling", "v1", "horizontalpodautoscalers"), "Exact",
     ("autoscaling", "v2", "horizontalpodautoscalers", hpa_v2("h", 60)), "", None, lambda o: True),
    ("hpa, own version", ("autoscaling", "v2", "horizontalpodautoscalers"), "Exact",
     ("autoscaling", "v2", "horizontalpodautoscalers", hpa_v2("h", 60)), "", ("autoscaling/v2", "v2"),
     lambda o: o["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 60),
    ("flowschema v1beta3 request, v1beta2 rule", ("flowcontrol.apiserver.k8s.io", "v1beta2", "flowschemas"),
     "Equivalent", ("flowcontrol.apiserver.k8s.io", "v1beta3", "flowschemas", flow_schema("f")), "",
     ("flowcontrol.apiserver.k8s.io/v1beta2", "v1beta3"), lambda o: o["spec"]["matchingPrecedence"] == 9000),
    ("core event request, events.k8s.io rule", ("events.k8s.io", "v1", "events"), "Equivalent",
     ("", "v1", "events", core_event("e")), "", ("events.k8s.io/v1", "v1"),
     lambda o: o["note"] == "hello" and "message" not in o),
    ("crd without conversion", (GROUP, "v1", "widgets"), "Equivalent",
     (GROUP, "v2", "widgets", widget("w", "v2", paint="red")), "none", (f"{GROUP}/v1", "v2"),
     lambda o: o["spec"] == {"paint": "red"}),
    ("crd converted by its webhook", (GROUP, "v1", "widgets"), "Equivalent",
     (GROUP, "v2", "widgets", widget("w", "v2", paint="red")), "webhook", (f"{GROUP}/v1", "v2"),
     lambda o: o["spec"] == {"color": "red"}),
    ("crd, Exact", (GROUP, "v1", "widgets"), "Exact",
     (GROUP, "v2", "widgets", widget("w", "v2", paint="red")), "webhook", None, lambda o: True),
]


@pytest.mark.parametrize(("case", "rule", "policy", "created", "crd", "seen", "check"), CASES,
                         ids=[c[0] for c in CASES])
async def test_equivalent_versions_reach_the_webhook_converted(
        client: Client, case: str, rule: tuple[str, str, str], policy: str, created: tuple[str, str, str, Obj],
        crd: str, seen: tuple[str, str] | None, check: Callable[[Obj], bool]) -> None:
    group, version, resource = rule
    async with serve(lambda request: {"allowed": True}) as hook, serve(convert) as converter:
        if crd:
            await client.create(CRDS, none_crd() if crd == "none" else conversion_crd(converter.client_config(),
                                                                                     ["v1"]))
            await established(client, f"widgets.{GROUP}")
        await configure(client, "validatingwebhookconfigurations", "config", [webhook(
            "v.example.com", hook.client_config(), matchPolicy=policy,
            rules=[{"operations": ["CREATE"], "apiGroups": [group], "apiVersions": [version],
                    "resources": [resource]}])])
        g, v, res, obj = created
        namespace = "" if res == "flowschemas" else "default"
        await client.create(path(res, namespace, group=g, version=v), obj)
        if seen is None:
            assert hook.requests == []
            return
        (review,) = hook.requests
        request = review["request"]
        api_version, request_version = seen
        matched_group, _, matched_version = api_version.rpartition("/")
        assert request["kind"] == {"group": matched_group, "version": matched_version, "kind": obj["kind"]}
        assert request["resource"] == {"group": group, "version": version, "resource": resource}
        assert request["requestKind"] == {"group": g, "version": request_version, "kind": obj["kind"]}
        assert request["requestResource"] == {"group": g, "version": v, "resource": res}
        assert request["object"]["apiVersion"] == api_version
        assert check(request["object"]), request["object"]


def raise_cpu(request: Obj) -> Obj:
    return {"allowed": True, "patch": [{"op": "replace", "path": "/spec/targetCPUUtilizationPercentage",
                                        "value": 80}]}


def repaint(request: Obj) -> Obj:
    assert request["object"]["spec"] == {"color": "red"}
    return {"allowed": True, "patch": [{"op": "replace", "path": "/spec/color", "value": "blue"}]}


async def test_a_patch_to_the_converted_object_comes_back_converted(client: Client) -> None:
    """A mutating webhook on autoscaling/v1 changes a v2 HPA; one on a CRD's v1 changes an object created at
    v2 (converted both ways by the CRD's conversion webhook)."""
    async with serve(raise_cpu) as cpu, serve(repaint) as paint, serve(convert) as converter:
        await client.create(CRDS, conversion_crd(converter.client_config(), ["v1"]))
        await established(client, f"widgets.{GROUP}")
        await configure(client, "mutatingwebhookconfigurations", "config", [
            webhook("cpu.example.com", cpu.client_config(), rules=[{
                "operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v1"],
                "resources": ["horizontalpodautoscalers"]}]),
            webhook("paint.example.com", paint.client_config(), rules=[{
                "operations": ["CREATE"], "apiGroups": [GROUP], "apiVersions": ["v1"], "resources": ["widgets"]}]),
        ])
        created = await client.create(path("horizontalpodautoscalers", "default", group="autoscaling",
                                           version="v2"), hpa_v2("h", 60))
        assert created["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 80
        widget_v2 = await client.create(path("widgets", "default", group=GROUP, version="v2"),
                                        copy.deepcopy(widget("w", "v2", paint="red")))
        assert widget_v2["apiVersion"] == f"{GROUP}/v2" and widget_v2["spec"] == {"paint": "blue"}
        stored = await client.get(path("widgets", "default", "w", group=GROUP, version="v1"))
        assert stored["spec"] == {"color": "blue"}


async def test_status_subresource_of_an_equivalent_version(client: Client) -> None:
    """A rule on `horizontalpodautoscalers/status` in v1 matches a v2 status update, sent as a v1 object."""
    async with serve(lambda request: {"allowed": True}) as hook:
        created = await client.create(path("horizontalpodautoscalers", "default", group="autoscaling",
                                           version="v2"), hpa_v2("h", 60))
        await configure(client, "validatingwebhookconfigurations", "config", [webhook(
            "v.example.com", hook.client_config(), rules=[{
                "operations": ["UPDATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v1"],
                "resources": ["horizontalpodautoscalers/status"]}])])
        created["status"] = {"currentReplicas": 2, "desiredReplicas": 3}
        await client.update(path("horizontalpodautoscalers", "default", "h", group="autoscaling", version="v2",
                                 subresource="status"), created)
        (review,) = hook.requests
        request = review["request"]
        assert request["subResource"] == "status" and request["requestSubResource"] == "status"
        assert request["resource"]["version"] == "v1" and request["requestResource"]["version"] == "v2"
        assert request["object"]["apiVersion"] == "autoscaling/v1"
        assert request["object"]["status"]["desiredReplicas"] == 3
        assert request["oldObject"]["apiVersion"] == "autoscaling/v1"
