"""Writes through subresources whose REST has its own kind reach admission webhooks as kube-apiserver 1.28 sends
them: pods/binding (and the legacy bindings resource) as a CREATE of a v1 Binding, pods/eviction as a CREATE of a
policy/v1 Eviction, /scale of built-in kinds and custom resources as an UPDATE of autoscaling/v1 Scales (oldObject
the stored Scale); rules such as `pods/binding` and `*/scale` match them, a denial stops the request with kube's
text, and a mutating webhook's change takes effect. Real HTTPS webhook servers, a real core over gRPC."""

from __future__ import annotations

from typing import Any

import pytest

from capstan.testing.webhooks import serve
from tests.server.admission.test_admission_webhooks import configure, webhook
from tests.server.client import Client, Failed, path
from tests.server.crd.test_crds import CRDS, GROUP, established

Obj = dict[str, Any]
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                       "template": {"metadata": {"labels": {"app": "d"}},
                                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
SCALABLE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gadgets.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced", "names": {"plural": "gadgets", "kind": "Gadget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                               "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}},
                           "subresources": {"scale": {"specReplicasPath": ".spec.replicas",
                                                      "statusReplicasPath": ".status.replicas"}}}]},
}
BINDING = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
           "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
EVICTION = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": "default"}}


def scale_of(name: str, replicas: int) -> Obj:
    return {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas}}


async def prepare(client: Client, what: str) -> None:
    if what in ("binding", "legacy binding", "eviction"):
        await client.create(path("pods", "default"), POD)
    elif what == "deployment scale":
        await client.create(path("deployments", "default", group="apps"), DEPLOYMENT)
    else:
        await client.create(CRDS, SCALABLE_CRD)
        await established(client, f"gadgets.{GROUP}")
        await client.create(path("gadgets", "default", group=GROUP), {
            "apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"replicas": 1}})


async def request(client: Client, what: str) -> None:
    if what == "binding":
        await client.create(path("pods", "default", "p", subresource="binding"), BINDING)
    elif what == "legacy binding":
        await client.create(path("bindings", "default"), BINDING)
    elif what == "eviction":
        await client.create(path("pods", "default", "p", subresource="eviction"), EVICTION)
    elif what == "deployment scale":
        await client.update(path("deployments", "default", "d", group="apps", subresource="scale"), scale_of("d", 3))
    else:
        await client.update(path("gadgets", "default", "g", group=GROUP, subresource="scale"), scale_of("g", 3))


async def outcome(client: Client, what: str) -> object:
    """What the request changed: the Pod's node, whether it is there, the replicas."""
    if what in ("binding", "legacy binding"):
        return (await client.get(path("pods", "default", "p")))["spec"].get("nodeName")
    if what == "eviction":
        return [p["metadata"]["name"] for p in (await client.list(path("pods", "default")))[1]]
    if what == "deployment scale":
        return (await client.get(path("deployments", "default", "d", group="apps")))["spec"]["replicas"]
    return (await client.get(path("gadgets", "default", "g", group=GROUP)))["spec"]["replicas"]


# (request, rule (apiGroups, resources, operations), operation, kind sent (group, version, kind), resource and
#  subresource sent, whether an oldObject is sent, outcome when allowed, outcome when denied)
CASES: list[tuple[str, tuple[str, str, str], str, tuple[str, str, str], tuple[str, str], bool, object, object]] = [
    ("binding", ("", "pods/binding", "CREATE"), "CREATE", ("", "v1", "Binding"), ("pods", "binding"), False,
     "node-1", None),
    ("legacy binding", ("", "bindings", "CREATE"), "CREATE", ("", "v1", "Binding"), ("bindings", ""), False,
     "node-1", None),
    ("eviction", ("", "pods/eviction", "CREATE"), "CREATE", ("policy", "v1", "Eviction"), ("pods", "eviction"),
     False, [], ["p"]),
    ("deployment scale", ("apps", "*/scale", "UPDATE"), "UPDATE", ("autoscaling", "v1", "Scale"),
     ("deployments", "scale"), True, 3, 1),
    ("custom resource scale", (GROUP, "gadgets/scale", "UPDATE"), "UPDATE", ("autoscaling", "v1", "Scale"),
     ("gadgets", "scale"), True, 3, 1),
]


@pytest.mark.parametrize(("what", "rule", "operation", "kind", "resource", "has_old", "allowed", "denied"), CASES,
                         ids=[c[0] for c in CASES])
@pytest.mark.parametrize("allow", [True, False], ids=["allowed", "denied"])
async def test_subresource_writes_reach_webhooks_as_kube_sends_them(
        client: Client, what: str, rule: tuple[str, str, str], operation: str, kind: tuple[str, str, str],
        resource: tuple[str, str], has_old: bool, allowed: object, denied: object, allow: bool) -> None:
    def answer(review: Obj) -> Obj:
        if allow:
            return {"allowed": True}
        return {"allowed": False, "status": {"code": 403, "reason": "Forbidden", "message": "not now"}}

    await prepare(client, what)
    group, resources, operations = rule
    async with serve(answer) as hook:
        await configure(client, "validatingwebhookconfigurations", "config", [webhook(
            "v.example.com", hook.client_config(), rules=[{
                "operations": [operations], "apiGroups": [group], "apiVersions": ["*"], "resources": [resources]}])])
        if allow:
            await request(client, what)
        else:
            with pytest.raises(Failed) as failed:
                await request(client, what)
            assert failed.value.status["code"] == 403
            assert failed.value.status["message"] == 'admission webhook "v.example.com" denied the request: not now'
        (review,) = hook.requests
    sent = review["request"]
    assert sent["operation"] == operation
    assert sent["kind"] == sent["requestKind"] == {"group": kind[0], "version": kind[1], "kind": kind[2]}
    assert sent["resource"]["resource"] == resource[0]
    assert sent.get("subResource", "") == sent.get("requestSubResource", "") == resource[1]
    assert sent["name"] == {"deployment scale": "d", "custom resource scale": "g"}.get(what, "p")
    assert sent["object"]["kind"] == kind[2]
    assert sent["object"]["apiVersion"] == (f"{kind[0]}/{kind[1]}" if kind[0] else kind[1])
    if has_old:
        assert sent["oldObject"]["kind"] == "Scale" and sent["oldObject"]["spec"]["replicas"] == 1
        assert sent["object"]["spec"]["replicas"] == 3
    else:
        assert sent["oldObject"] is None
    assert sent["options"]["kind"] == ("UpdateOptions" if operation == "UPDATE" else "CreateOptions")
    assert await outcome(client, what) == (allowed if allow else denied)


def patched(patch: list[Obj]) -> Any:
    return lambda review: {"allowed": True, "patch": patch}


async def test_mutating_webhooks_change_the_subresource_objects(client: Client) -> None:
    """A patch to a Scale sets the object's replicas; a patch to a Binding's annotations reaches the Pod."""
    await client.create(path("deployments", "default", group="apps"), DEPLOYMENT)
    await client.create(path("pods", "default"), POD)
    async with serve(patched([{"op": "replace", "path": "/spec/replicas", "value": 5}])) as scale, \
            serve(patched([{"op": "add", "path": "/metadata/annotations", "value": {"bound-by": "hook"}}])) as bind:
        await configure(client, "mutatingwebhookconfigurations", "config", [
            webhook("scale.example.com", scale.client_config(), rules=[{
                "operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
                "resources": ["deployments/scale"]}]),
            webhook("bind.example.com", bind.client_config(), rules=[{
                "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/binding"]}]),
        ])
        answered, _ = await client.update(path("deployments", "default", "d", group="apps", subresource="scale"),
                                          scale_of("d", 3))
        assert answered["spec"]["replicas"] == 5
        assert (await client.get(path("deployments", "default", "d", group="apps")))["spec"]["replicas"] == 5
        await client.create(path("pods", "default", "p", subresource="binding"), BINDING)
        pod = await client.get(path("pods", "default", "p"))
        assert pod["spec"]["nodeName"] == "node-1"
        assert pod["metadata"]["annotations"]["bound-by"] == "hook"
