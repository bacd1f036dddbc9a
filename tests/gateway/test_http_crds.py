"""CustomResourceDefinitions over HTTP, through both transports: a CRD installed with a POST is served on
REST, in discovery (legacy and aggregated) and in the OpenAPI documents promptly, custom resources
are JSON only (as kube-apiserver serves them), and deleting the CRD takes all of it away again."""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any

import orjson
import pytest
import yaml
from google.protobuf import descriptor_pool, message_factory

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.codecs import protobuf as protobuf_codec
from tests.gateway.conftest import Response, Server
from tests.server.crd.test_crds import gadget_descriptors

Obj = dict[str, Any]

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
JSON, YAML, PROTOBUF = "application/json", "application/yaml", "application/vnd.kubernetes.protobuf"
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"

SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {
            "size": {"type": "integer", "minimum": 1, "description": "How big."},
            "color": {"type": "string", "default": "red"},
        }},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}
CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": SCHEMA},
                      "subresources": {"status": {}},
                      "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]}],
    },
}


async def install(server: Server, body: Obj | None = None) -> None:
    """POST the CRD and wait until a LIST of its resource answers, then until it is Established; each within
    5 s."""
    started = time.monotonic()
    await server.create(CRDS, body or CRD)
    while (await server.request("GET", WIDGETS)).status != 200:
        assert time.monotonic() - started < 5, "not served promptly"
        await asyncio.sleep(0.01)
    while not any(c["type"] == "Established" and c["status"] == "True" for c in
                  (await server.request("GET", f"{CRDS}/widgets.example.com")).json()["status"]["conditions"]
                  or []):
        assert time.monotonic() - started < 5, "not established promptly"  # served first, then Established
        await asyncio.sleep(0.01)


async def test_a_crd_is_served_on_rest_promptly(server: Server) -> None:
    # install() fails unless the CRD is served within 5 s: the gateway follows the CRD's write rather than polling
    # for it. A tighter bound would measure the machine's load (four test workers on two cores take over a second).
    await install(server)
    created = await server.create(WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                            "metadata": {"name": "w"}, "spec": {"size": 2}})
    assert (created["kind"], created["apiVersion"], created["spec"]) == (
        "Widget", "example.com/v1", {"size": 2, "color": "red"})
    listed = (await server.request("GET", WIDGETS)).json()
    assert (listed["kind"], listed["apiVersion"], [i["metadata"]["name"] for i in listed["items"]]) == (
        "WidgetList", "example.com/v1", ["w"])
    assert (listed["items"][0]["kind"], listed["items"][0]["apiVersion"]) == ("Widget", "example.com/v1")
    all_namespaces = (await server.request("GET", "/apis/example.com/v1/widgets")).json()
    assert [i["metadata"]["name"] for i in all_namespaces["items"]] == ["w"]


def _version(name: str, **more: Any) -> Obj:
    return {"name": name, "served": True, "storage": name == "v1",
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}, **more}


@pytest.mark.parametrize(("versions", "asked", "warnings"), [
    ([_version("v1")], "v1", []),
    ([_version("v1"), _version("v1beta1", deprecated=True)], "v1beta1",
     ['299 - "example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"']),
    # the most preferred served version that is not deprecated; an unserved or deprecated one is never named
    ([_version("v1"), _version("v2beta1"), _version("v1alpha1", deprecated=True), _version("v3", served=False)],
     "v1alpha1", ['299 - "example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget"']),
    # nothing preferred to it: the bare text
    ([_version("v1", deprecated=True), _version("v1beta1")], "v1", ['299 - "example.com/v1 Widget is deprecated"']),
    ([_version("v1"), _version("v1beta1", deprecated=True, deprecationWarning="v1beta1 goes away in 2027")],
     "v1beta1", ['299 - "v1beta1 goes away in 2027"']),
])
async def test_a_deprecated_version_warns_every_request(server: Server, versions: list[Obj], asked: str,
                                                        warnings: list[str]) -> None:
    crd = copy.deepcopy(CRD)
    crd["spec"]["versions"] = versions
    await install(server, crd)
    at = f"/apis/example.com/{asked}/namespaces/default/widgets"
    deadline = time.monotonic() + 3
    while (listed := await server.request("GET", at)).status == 404:
        assert time.monotonic() < deadline, "the version is not served"
        await asyncio.sleep(0.02)
    created = await server.request("POST", at, json={"apiVersion": f"example.com/{asked}", "kind": "Widget",
                                                    "metadata": {"name": "w"}})
    assert (listed.headers.getall("Warning", []), created.headers.getall("Warning", [])) == (warnings, warnings)


async def test_discovery_lists_the_resource_and_drops_it_with_the_crd(server: Server) -> None:
    await install(server)
    groups = (await server.request("GET", "/apis")).json()
    assert {"name": "example.com", "versions": [{"groupVersion": "example.com/v1", "version": "v1"}],
            "preferredVersion": {"groupVersion": "example.com/v1", "version": "v1"}} in groups["groups"]
    listed = (await server.request("GET", "/apis/example.com/v1")).json()
    assert [(r["name"], r["kind"], r.get("shortNames"), r.get("categories")) for r in listed["resources"]] == [
        ("widgets", "Widget", ["wd"], ["all"]), ("widgets/status", "Widget", None, None)]
    assert listed["resources"][0]["verbs"] == [
        "delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]
    aggregated = (await server.request("GET", "/apis", headers={"Accept": AGGREGATED_V2})).json()
    item = next(i for i in aggregated["items"] if i["metadata"].get("name") == "example.com")
    resource = item["versions"][0]["resources"][0]
    assert (resource["resource"], resource["shortNames"], resource["categories"], resource["scope"]) == (
        "widgets", ["wd"], ["all"], "Namespaced")
    deleted = await server.request("DELETE", f"{CRDS}/widgets.example.com")
    assert deleted.status == 200
    deadline = time.monotonic() + 3
    while (await server.request("GET", "/apis/example.com/v1")).status != 404:
        assert time.monotonic() < deadline, "still in discovery"
        await asyncio.sleep(0.02)
    assert (await server.request("GET", WIDGETS)).status == 404
    groups = (await server.request("GET", "/apis")).json()
    assert "example.com" not in [g["name"] for g in groups["groups"]]


@pytest.mark.parametrize(("accept", "status", "content_type"), [
    (f"{PROTOBUF}, {JSON}", 200, JSON),  # kubectl and client-go ask this way: protobuf is passed over
    (PROTOBUF, 406, JSON),
    (YAML, 200, YAML),
])
async def test_custom_resources_are_json_only(server: Server, accept: str, status: int, content_type: str) -> None:
    await install(server)
    await server.create(WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    got = await server.request("GET", f"{WIDGETS}/w", headers={"Accept": accept})
    assert (got.status, got.content_type) == (status, content_type), got.body


async def test_a_protobuf_body_is_unsupported(server: Server) -> None:
    await install(server)
    resp = await server.request("POST", WIDGETS, body=b"k8s\x00", headers={"Content-Type": PROTOBUF})
    assert (resp.status, resp.json()["reason"]) == (415, "UnsupportedMediaType")
    smp = await server.request("PATCH", f"{WIDGETS}/w", body=b"{}",
                               headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert smp.status == 415


async def test_yaml_bodies_and_validation_errors(server: Server) -> None:
    await install(server)
    body = yaml.safe_dump({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "yml"},
                           "spec": {"size": "big"}}).encode()
    resp = await server.request("POST", WIDGETS, body=body, headers={"Content-Type": YAML})
    assert resp.status == 422
    assert resp.json()["message"] == (
        'Widget.example.com "yml" is invalid: spec.size: Invalid value: "string": spec.size in body must be of '
        'type integer: "string"')


async def test_unknown_fields_warn(server: Server) -> None:
    await install(server)
    resp = await server.request("POST", WIDGETS, json={"apiVersion": "example.com/v1", "kind": "Widget",
                                                       "metadata": {"name": "u"}, "spec": {"size": 1, "x": 1}})
    assert resp.status == 201
    assert resp.headers.getall("Warning") == ['299 - "unknown field \\"spec.x\\""']
    strict = await server.request("POST", WIDGETS + "?fieldValidation=Strict", json={
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "s"}, "spec": {"x": 1}})
    assert (strict.status, strict.json()["message"]) == (
        400, 'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.x"')


@pytest.mark.parametrize("query", ["?watch=1", "?watch=1&resourceVersion=0", "?watch=1&allowWatchBookmarks=true"])
async def test_deleting_the_crd_ends_its_resources_watches(server: Server, query: str) -> None:
    """As kube-apiserver tears a custom resource's storage down with its CRD: the open watches end (no ERROR
    event) instead of lasting their timeout, and the client's next list is the 404 that tells it the resource is
    gone."""
    await install(server)
    async with server.watch(WIDGETS + query) as stream:
        assert stream.status == 200
        await server.create(WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
        [event] = await stream.lines(1)
        assert event["type"] == "ADDED"
        await server.request("DELETE", f"{CRDS}/widgets.example.com")
        rest = await stream.end()  # the CRD's finalizer deletes its objects first: those events, then the end
    assert [orjson.loads(line)["type"] for line in rest.splitlines()] == ["DELETED"]
    assert (await server.request("GET", WIDGETS)).status == 404


async def test_tables_watch_and_status(server: Server) -> None:
    await install(server)
    async with server.watch(WIDGETS + "?watch=1") as stream:
        assert stream.status == 200
        await server.create(WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "t"},
                                      "spec": {"size": 3}})
        [event] = await stream.lines(1)
        assert (event["type"], event["object"]["kind"], event["object"]["spec"]["size"]) == ("ADDED", "Widget", 3)
    table = (await server.request("GET", WIDGETS, headers={"Accept": TABLE})).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size"]
    assert table["rows"][0]["cells"] == ["t", 3]
    current = (await server.request("GET", f"{WIDGETS}/t")).json()
    current["status"] = {"ready": True}
    status = await server.request("PUT", f"{WIDGETS}/t/status", json=current)
    assert (status.status, status.json()["status"]) == (200, {"ready": True})


async def test_openapi_documents_carry_the_crd_schema(server: Server) -> None:
    await install(server)
    index = (await server.request("GET", "/openapi/v3")).json()
    assert "apis/example.com/v1" in index["paths"]
    url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
    doc = (await server.request("GET", url)).json()
    schema = doc["components"]["schemas"]["com.example.v1.Widget"]
    assert schema["x-kubernetes-group-version-kind"] == [{"group": "example.com", "kind": "Widget", "version": "v1"}]
    assert schema["properties"]["spec"]["properties"]["size"] == {
        "type": "integer", "minimum": 1, "description": "How big."}
    assert schema["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert "com.example.v1.WidgetList" in doc["components"]["schemas"]
    item = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    assert set(item["get"]["responses"]["200"]["content"]) == {JSON, YAML}
    assert "application/strategic-merge-patch+json" not in item["patch"]["requestBody"]["content"]
    v2 = (await server.request("GET", "/openapi/v2")).json()
    assert v2["definitions"]["com.example.v1.Widget"]["properties"]["spec"]["properties"]["color"] == {
        "type": "string", "default": "red"}


async def test_a_schema_change_applies_to_later_writes(server: Server) -> None:
    await install(server)
    crd = (await server.request("GET", f"{CRDS}/widgets.example.com")).json()
    changed = copy.deepcopy(crd)
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"][
        "maximum"] = 5
    assert (await server.request("PUT", f"{CRDS}/widgets.example.com", json=changed)).status == 200
    deadline = time.monotonic() + 2
    while True:
        resp: Response = await server.request("POST", WIDGETS, json={
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"generateName": "w-"},
            "spec": {"size": 9}})
        if resp.status == 422 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.02)
    assert resp.status == 422
    assert orjson.loads(resp.body)["details"]["causes"][0]["message"] == (
        "Invalid value: 9: spec.size in body should be less than or equal to 5")


async def test_a_crd_with_a_registered_message_speaks_the_protobuf_envelope(server: Server) -> None:
    package = f"gadgets{int(time.monotonic() * 1e6)}.v1"
    await server.core.core.register_descriptors(
        core_pb2.RegisterDescriptorsRequest(descriptors=gadget_descriptors(package)))
    body = copy.deepcopy(CRD)
    body["metadata"]["annotations"] = {"capstan.dev/protobuf-message": f"{package}.Gadget"}
    body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"].pop("status")
    body["spec"]["versions"][0]["subresources"] = {}
    await install(server, body)
    await server.create(WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "p"},
                                  "spec": {"size": 2}})
    got = await server.request("GET", f"{WIDGETS}/p", headers={"Accept": PROTOBUF})
    assert (got.status, got.content_type) == (200, PROTOBUF)
    api_version, kind, raw = protobuf_codec.decode_envelope(got.body)
    assert (api_version, kind) == ("example.com/v1", "Widget")
    gadget = message_factory.GetMessageClass(descriptor_pool.Default().FindMessageTypeByName(f"{package}.Gadget"))
    decoded: Any = gadget.FromString(raw)
    assert (decoded.metadata.name, decoded.spec.size, decoded.spec.color) == ("p", 2, "red")
    sent: Any = gadget()
    sent.metadata.name = "q"
    sent.spec.size = 3
    created = await server.request("POST", WIDGETS, body=protobuf_codec.encode(
        sent.SerializeToString(), api_version="example.com/v1", kind="Widget"), headers={"Content-Type": PROTOBUF})
    assert (created.status, created.json()["spec"]) == (201, {"size": 3, "color": "red"})
