"""core/v1 PodTemplate through a real core over gRPC: discovery, the template's PodSpec defaults, ValidatePodTemplate's
causes (exact Status), generation, a delete answering with the object, deletecollection, watch and field selectors.

Expected answers are written from kube-apiserver's source: pkg/registry/core/podtemplate (strategy, storage),
pkg/apis/core/validation (ValidatePodTemplate, ValidatePodTemplateSpec), pkg/apis/core/v1 defaults.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from tests.server import kube
from tests.server.client import Client, Obj, path, refused

NS = "default"
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
    "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def template(name: str = "web", labels: Obj | None = None, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name},
            "template": {"metadata": {"labels": labels or {"app": "web"}},
                         "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}], **spec}}}


async def test_discovery_names_podtemplates_as_kube_does(client: Client) -> None:
    discovered = await client.call(client.stub.Discover, core_pb2.DiscoverRequest())
    found = next(r for r in discovered.resources if r.resource == "podtemplates" and not r.group)
    assert (found.kind, found.singular, found.list_kind, found.namespaced) == (
        "PodTemplate", "podtemplate", "PodTemplateList", True)
    assert (list(found.short_names), list(found.categories), list(found.subresources)) == ([], [], [])
    assert sorted(found.verbs) == ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    assert found.proto_message == "k8s.io.api.core.v1.PodTemplate"
    assert list(found.selectable_fields) == ["metadata.name", "metadata.namespace"]


async def test_the_template_takes_the_pod_spec_defaults(client: Client) -> None:
    created = await client.create(path("podtemplates", NS), template(containers=[
        {"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]))
    assert created["template"] == {"metadata": {"creationTimestamp": None, "labels": {"app": "web"}}, "spec": {
        "containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "resources": {}, "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "securityContext": {}, "schedulerName": "default-scheduler"}}
    assert created["metadata"]["generation"] == 1
    assert "status" not in created and "spec" not in created


# (id, the PodTemplate sent, the causes of the 422)
VALIDATION: list[tuple[str, Obj, list[Obj]]] = [
    ("no template", {"metadata": {"name": "web"}},
     [kube.cause("FieldValueRequired", "Required value", "template.spec.containers")]),
    ("no containers", template(containers=[]),
     [kube.cause("FieldValueRequired", "Required value", "template.spec.containers")]),
    ("template label value", template(labels={"app": "-web"}),
     [kube.field_invalid("template.labels", "-web", LABEL_VALUE_MSG)]),
    ("restart policy", template(restartPolicy="Sometimes"),
     [kube.field_not_supported("template.spec.restartPolicy", '"Sometimes"', ["Always", "OnFailure", "Never"])]),
    ("ephemeral containers", template(ephemeralContainers=[{"name": "debug", "image": "busybox"}]),
     [kube.field_forbidden("template.spec.ephemeralContainers", "ephemeral containers not allowed in pod template")]),
    ("pod name rules", template(name="Web"),
     [kube.field_invalid("metadata.name", "Web", (
         "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
         "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"))]),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "causes"), [v[1:] for v in VALIDATION], ids=[v[0] for v in VALIDATION])
async def test_validation(client: Client, obj: Obj, causes: list[Obj]) -> None:
    before = client.revision()
    failed = await refused(client.create(path("podtemplates", NS), obj))
    assert failed.status == kube.invalid("PodTemplate", obj["metadata"]["name"], causes)
    assert client.revision() == before


async def test_an_update_is_validated_and_a_template_change_raises_the_generation(client: Client) -> None:
    created = await client.create(path("podtemplates", NS), template())
    relabelled = copy.deepcopy(created)
    relabelled["metadata"]["labels"] = {"tier": "front"}
    updated, was_created = await client.update(path("podtemplates", NS, "web"), relabelled)
    assert (was_created, updated["metadata"]["generation"]) == (False, 1)
    updated["template"]["metadata"]["labels"] = {"app": "web", "track": "canary"}
    updated, _ = await client.update(path("podtemplates", NS, "web"), updated)
    assert updated["metadata"]["generation"] == 2
    updated["template"]["spec"]["containers"] = []
    failed = await refused(client.update(path("podtemplates", NS, "web"), updated))
    assert failed.status == kube.invalid("PodTemplate", "web", [
        kube.cause("FieldValueRequired", "Required value", "template.spec.containers")])


async def test_a_missing_podtemplate_is_not_created_by_an_update(client: Client) -> None:
    failed = await refused(client.update(path("podtemplates", NS, "web"), template()))
    assert failed.status == kube.not_found("podtemplates", "web")


async def test_delete_answers_with_the_deleted_object(client: Client) -> None:
    created = await client.create(path("podtemplates", NS), template())
    gone = await client.delete(path("podtemplates", NS, "web"))
    assert (gone["kind"], gone["metadata"]["uid"], gone["template"]) == ("PodTemplate", created["metadata"]["uid"],
                                                                        created["template"])
    failed = await refused(client.get(path("podtemplates", NS, "web")))
    assert failed.status == kube.not_found("podtemplates", "web")


async def test_list_watch_and_deletecollection(client: Client) -> None:
    first = await client.create(path("podtemplates", NS), template("a"))
    await client.create(path("podtemplates", NS), template("b"))
    assert await client.names(path("podtemplates", NS)) == ["a", "b"]
    events = await client.events(path("podtemplates", NS), lambda e: e[1]["metadata"]["name"] == "b",
                                 resourceVersion=first["metadata"]["resourceVersion"])
    assert [(kind, obj["kind"], obj["metadata"]["name"]) for kind, obj in events] == [("ADDED", "PodTemplate", "b")]
    deleted = await client.delete_collection(path("podtemplates", NS), {"labelSelector": ""})
    assert len(deleted.items) == 2
    assert await client.names(path("podtemplates", NS)) == []


@pytest.mark.parametrize(("selector", "names"), [
    ("metadata.name=a", ["a"]),
    ("metadata.name!=a", ["b"]),
    ("metadata.namespace=default", ["a", "b"]),
])  # fmt: skip
async def test_field_selectors(client: Client, selector: str, names: list[str]) -> None:
    for name in ("a", "b"):
        await client.create(path("podtemplates", NS), template(name))
    assert await client.names(path("podtemplates", NS), fieldSelector=selector) == names


async def test_no_field_beyond_metadata_selects(client: Client) -> None:
    failed = await refused(client.list(path("podtemplates", NS), fieldSelector="template.metadata.name=a"))
    assert failed.status["code"] == 400
    assert failed.status["message"].endswith(
        '"template.metadata.name" is not a known field selector: only "metadata.name", "metadata.namespace"')
