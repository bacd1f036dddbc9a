"""core/v1 podtemplates over HTTP, through both transports: discovery, protobuf bodies both ways (upstream-numbered
PodTemplate and PodTemplateList), create/replace/list/watch/delete/deletecollection as kube-apiserver answers them
(a delete answers with the object), Tables with printPodTemplate's columns, and the OpenAPI schema."""

from __future__ import annotations

from typing import Any

from capstan.api.core.v1 import core_pb2 as core
from gateway.codecs import protobuf as protobuf_codec
from tests.gateway.conftest import Server

Obj = dict[str, Any]
PROTOBUF = "application/vnd.kubernetes.protobuf"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
TEMPLATES = "/api/v1/namespaces/default/podtemplates"


def template(name: str, *images: str) -> Obj:
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name}, "template": {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(images or ("nginx",))]}}}


async def test_discovery_lists_podtemplates_as_kube_does(server: Server) -> None:
    listed = {r["name"]: r for r in (await server.request("GET", "/api/v1")).json()["resources"]}
    assert listed["podtemplates"] | {"storageVersionHash": "-"} == {
        "name": "podtemplates", "singularName": "podtemplate", "namespaced": True, "kind": "PodTemplate",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        "storageVersionHash": "-"}
    assert not [name for name in listed if name.startswith("podtemplates/")]


async def test_a_protobuf_podtemplate_is_created_defaulted_and_listed_as_protobuf(server: Server) -> None:
    message = core.PodTemplate(metadata={"name": "web"}, template=core.PodTemplateSpec(
        metadata={"labels": {"app": "web"}},
        spec=core.PodSpec(containers=[core.Container(name="app", image="nginx:1.27")])))
    created = await server.request(
        "POST", TEMPLATES, body=protobuf_codec.encode_envelope("v1", "PodTemplate", message.SerializeToString()),
        headers={"Content-Type": PROTOBUF, "Accept": PROTOBUF})
    assert (created.status, created.content_type) == (201, PROTOBUF)
    api_version, kind, raw = protobuf_codec.decode_envelope(created.body)
    stored = core.PodTemplate.FromString(raw)
    assert (api_version, kind, stored.metadata.generation) == ("v1", "PodTemplate", 1)
    spec = stored.template.spec
    assert (spec.restartPolicy, spec.dnsPolicy, spec.containers[0].imagePullPolicy) == (
        "Always", "ClusterFirst", "IfNotPresent")
    as_json = (await server.request("GET", f"{TEMPLATES}/web")).json()
    # Go prints the template's zero creationTimestamp as null.
    assert as_json["template"]["metadata"] == {"creationTimestamp": None, "labels": {"app": "web"}}
    listed = await server.request("GET", TEMPLATES, headers={"Accept": PROTOBUF})
    api_version, kind, raw = protobuf_codec.decode_envelope(listed.body)
    assert (api_version, kind) == ("v1", "PodTemplateList")
    assert [t.metadata.name for t in core.PodTemplateList.FromString(raw).items] == ["web"]


async def test_replace_delete_and_deletecollection(server: Server) -> None:
    created = await server.create(TEMPLATES, template("web"))
    created["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    replaced = await server.request("PUT", f"{TEMPLATES}/web", json=created)
    assert (replaced.status, replaced.json()["metadata"]["generation"]) == (200, 2)
    missing = await server.request("PUT", f"{TEMPLATES}/other", json=template("other"))
    assert (missing.status, missing.json()["reason"]) == (404, "NotFound")
    gone = await server.request("DELETE", f"{TEMPLATES}/web")
    assert (gone.status, gone.json()["kind"], gone.json()["metadata"]["name"]) == (200, "PodTemplate", "web")
    for name in ("a", "b"):
        await server.create(TEMPLATES, template(name))
    emptied = await server.request("DELETE", TEMPLATES)
    assert (emptied.status, emptied.json()["kind"]) == (200, "PodTemplateList")
    assert [t["metadata"]["name"] for t in emptied.json()["items"]] == ["a", "b"]
    assert (await server.request("GET", TEMPLATES)).json()["items"] == []


async def test_an_invalid_podtemplate_is_refused_with_kubes_status(server: Server) -> None:
    resp = await server.request("POST", TEMPLATES, json={"metadata": {"name": "web"}, "template": {"spec": {}}})
    assert (resp.status, resp.json()) == (422, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'PodTemplate "web" is invalid: template.spec.containers: Required value', "reason": "Invalid",
        "details": {"name": "web", "kind": "PodTemplate", "causes": [
            {"reason": "FieldValueRequired", "message": "Required value", "field": "template.spec.containers"}]},
        "code": 422})


async def test_watch_sees_podtemplates(server: Server) -> None:
    async with server.watch(f"{TEMPLATES}?watch=1&timeoutSeconds=5") as stream:
        created = await server.create(TEMPLATES, template("web"))
        (event,) = await stream.lines(1)
    assert (event["type"], event["object"]) == ("ADDED", created)


async def test_podtemplate_table(server: Server) -> None:
    await server.create(TEMPLATES, template("web", "nginx", "busybox"))
    doc = (await server.request("GET", TEMPLATES, headers={"Accept": TABLE})).json()
    assert [(c["name"], c["type"], c["priority"]) for c in doc["columnDefinitions"]] == [
        ("Name", "string", 0), ("Containers", "string", 0), ("Images", "string", 0), ("Pod Labels", "string", 0)]
    assert [r["cells"] for r in doc["rows"]] == [["web", "c0,c1", "nginx,busybox", "app=web"]]


async def test_openapi_describes_podtemplate(server: Server) -> None:
    doc = (await server.request("GET", "/openapi/v3/api/v1")).json()
    schema = doc["components"]["schemas"]["io.k8s.api.core.v1.PodTemplate"]
    assert set(schema["properties"]) == {"apiVersion", "kind", "metadata", "template"}
    assert schema["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "PodTemplate", "version": "v1"}]
    assert schema["properties"]["template"]["allOf"][0]["$ref"] == (
        "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec")
