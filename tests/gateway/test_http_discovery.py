"""Discovery over HTTP: /version, /api, /apis, group and group-version documents, aggregated discovery
(apidiscovery.k8s.io v2 and v2beta1) when asked, and the health endpoints."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from typing import Any

import pytest
import yaml

from capstan.api.meta.v1 import meta_pb2
from gateway.codecs import protobuf as protobuf_codec
from server.machinery.schema import JsonSchema
from server.machinery.version import CAPSTAN_VERSION
from server.registry.resources import Resource
from tests.gateway import kube
from tests.gateway.conftest import Server

Obj = dict[str, Any]
PROTOBUF = "application/vnd.kubernetes.protobuf"
GROUP = "example.capstan.dev"
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
KUBECTL = (  # what kubectl 1.32 sends for /api and /apis
    "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)
ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]

# /api/v1 as kube-apiserver lists these three resources: sorted by name (the installer sorts its paths),
# subresources as "resource/sub" entries, storageVersionHash the first 8 bytes of sha256("group/version/Kind").
CORE_V1: Obj = {
    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": [
        {"name": "configmaps", "singularName": "configmap", "namespaced": True, "kind": "ConfigMap",
         "verbs": ALL_VERBS, "shortNames": ["cm"], "storageVersionHash": "qFsyl6wFWjQ="},
        {"name": "namespaces", "singularName": "namespace", "namespaced": False, "kind": "Namespace",
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["ns"],
         "storageVersionHash": "Q3oi5N2YM8M="},
        {"name": "namespaces/finalize", "singularName": "", "namespaced": False, "kind": "Namespace",
         "verbs": ["update"]},
        {"name": "namespaces/status", "singularName": "", "namespaced": False, "kind": "Namespace",
         "verbs": ["get", "patch", "update"]},
        {"name": "secrets", "singularName": "secret", "namespaced": True, "kind": "Secret",
         "verbs": ALL_VERBS, "storageVersionHash": "S6u1pOWzb84="},
    ],
}


# The kinds CORE_V1 describes; the other core/v1 kinds are checked in tests/gateway/test_http_kinds_core.py.
CONFIG = frozenset({"configmaps", "namespaces", "secrets"})


def config_only(doc: Obj, key: str = "name") -> Obj:
    """doc (an APIResourceList or an aggregated version) with only CONFIG's resources."""
    return {**doc, "resources": [r for r in doc["resources"] if r[key].split("/")[0] in CONFIG]}


def aggregated_core(api_version: str) -> Obj:
    def kind(k: str) -> Obj:  # kube 1.28 leaves a built-in kind's own group and version empty
        return {"group": "", "version": "", "kind": k}

    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": [{
        "metadata": {"creationTimestamp": None},
        "versions": [{"version": "v1", "freshness": "Current", "resources": [
            {"resource": "configmaps", "responseKind": kind("ConfigMap"), "scope": "Namespaced",
             "singularResource": "configmap", "verbs": ALL_VERBS, "shortNames": ["cm"]},
            {"resource": "namespaces", "responseKind": kind("Namespace"), "scope": "Cluster",
             "singularResource": "namespace", "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
             "shortNames": ["ns"], "subresources": [
                 {"subresource": "finalize", "responseKind": kind("Namespace"), "verbs": ["update"]},
                 {"subresource": "status", "responseKind": kind("Namespace"), "verbs": ["get", "patch", "update"]}]},
            {"resource": "secrets", "responseKind": kind("Secret"), "scope": "Namespaced",
             "singularResource": "secret", "verbs": ALL_VERBS},
        ]}],
    }]}


async def test_version(server: Server) -> None:
    resp = await server.request("GET", "/version", headers={"Accept": "application/json"})
    doc = resp.json()
    assert (resp.status, resp.content_type, list(doc)) == (200, "application/json", [
        "major", "minor", "gitVersion", "gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"])
    assert (doc["major"], doc["minor"], doc["gitVersion"]) == ("1", "28", "v1.28.15")  # the release implemented
    assert doc["gitCommit"] == f"capstan-{CAPSTAN_VERSION}"  # the build fields name Capstan's release
    assert resp.body.startswith(b'{\n  "major": "1",\n')  # written indented, whatever was asked


@pytest.mark.parametrize(("method", "accept", "code", "content_type", "message"), [
    ("GET", "*/*", 200, "application/json", None),
    ("GET", "", 200, "application/json", None),
    ("GET", "application/json;q=0.5, text/html", 200, "application/json", None),
    # go-restful's /version route produces application/json alone; its 406 in what kube's negotiation picks
    ("GET", "application/yaml", 406, "application/yaml",
     "406: Not Acceptable\n\nAvailable representations: application/json"),
    ("GET", "application/xml", 406, "application/json",
     "406: Not Acceptable\n\nAvailable representations: application/json"),
    ("HEAD", "", 405, "application/json", None),  # no HEAD routes in kube
    ("POST", "", 405, "application/json", "the server does not allow this method on the requested resource"),
])
async def test_version_is_a_go_restful_get_route(server: Server, method: str, accept: str, code: int,
                                                 content_type: str, message: str | None) -> None:
    """kube-apiserver 1.28.7 answers so, checked side by side."""
    resp = await server.request(method, "/version", headers={"Accept": accept})
    assert (resp.status, resp.content_type) == (code, content_type)
    if message is not None:
        doc = yaml.safe_load(resp.body)
        assert (doc["message"], doc["details"]) == (message, {})


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
async def test_health(server: Server, path: str) -> None:
    resp = await server.request("GET", path)
    assert (resp.status, resp.body) == (200, b"ok")
    assert resp.content_type.startswith("text/plain")


async def test_legacy_root_documents(server: Server) -> None:
    api = await server.request("GET", "/api")
    assert (api.status, api.content_type, api.json()) == (200, "application/json", {
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:8080"}]})
    apis = await server.request("GET", "/apis")
    assert (apis.status, apis.json()["kind"], apis.json()["apiVersion"]) == (200, "APIGroupList", "v1")
    first = {"groupVersion": "apiregistration.k8s.io/v1", "version": "v1"}  # the aggregator's, then by priority
    assert apis.json()["groups"][0] == {"name": "apiregistration.k8s.io", "versions": [first],
                                        "preferredVersion": first}
    assert [g["name"] for g in apis.json()["groups"]][1:3] == ["apps", "events.k8s.io"]


async def test_core_group_version_resources(server: Server) -> None:
    resp = await server.request("GET", "/api/v1")
    assert (resp.status, resp.content_type, config_only(resp.json())) == (200, "application/json", CORE_V1)
    resources = resp.json()["resources"]
    assert [r["name"] for r in resources][:3] == ["bindings", "componentstatuses", "configmaps"]  # kube's order
    configmaps = next(r for r in resources if r["name"] == "configmaps")
    assert configmaps == CORE_V1["resources"][0]
    assert list(configmaps) == ["name", "singularName", "namespaced", "kind", "verbs", "shortNames",
                                "storageVersionHash"]


@pytest.mark.parametrize(("path", "expected"), [
    ("/api", {"kind": "APIVersions", "versions": ["v1"]}),
    ("/api/v1", {"kind": "APIResourceList", "groupVersion": "v1"}),
])
async def test_legacy_documents_in_yaml_and_protobuf(server: Server, path: str, expected: Obj) -> None:
    as_yaml = await server.request("GET", path, headers={"Accept": "application/yaml"})
    assert (as_yaml.status, as_yaml.content_type) == (200, "application/yaml")
    assert as_yaml.body.startswith(b"apiVersion: v1\n" if path == "/api/v1" else b"kind: APIVersions\n")
    as_proto = await server.request("GET", path, headers={"Accept": PROTOBUF})
    assert (as_proto.status, as_proto.content_type) == (200, PROTOBUF)
    api_version, kind, raw = protobuf_codec.decode_envelope(as_proto.body)
    assert (api_version, kind) == ("v1", expected["kind"])
    if kind == "APIVersions":
        versions = meta_pb2.APIVersions.FromString(raw)
        assert (list(versions.versions), versions.serverAddressByClientCIDRs[0].serverAddress) == (
            ["v1"], "127.0.0.1:8080")
    else:
        listed = meta_pb2.APIResourceList.FromString(raw)
        assert [(r.name, r.namespaced, list(r.verbs.items), list(r.shortNames)) for r in listed.resources
                if r.name.split("/")[0] in CONFIG] == [
            (r["name"], r["namespaced"], r["verbs"], r.get("shortNames", [])) for r in CORE_V1["resources"]]


@pytest.mark.parametrize(("accept", "version"), [
    (AGGREGATED_V2, "v2"),
    (AGGREGATED_V2BETA1, "v2beta1"),
    (KUBECTL, "v2"),  # protobuf is passed over for the JSON clause after it
    (f"{AGGREGATED_V2BETA1};q=0.9,{AGGREGATED_V2}", "v2"),
])
async def test_aggregated_discovery(server: Server, accept: str, version: str) -> None:
    api = await server.request("GET", "/api", headers={"Accept": accept})
    # The Content-Type echoes the conversion: g, v and as, in that order (generateMediaTypeWithGVK).
    content_type = f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
    doc = api.json()
    doc["items"][0]["versions"][0] = config_only(doc["items"][0]["versions"][0], "resource")
    assert (api.status, api.content_type, doc) == (200, content_type, aggregated_core(f"apidiscovery.k8s.io/{version}"))
    apis = await server.request("GET", "/apis", headers={"Accept": accept})
    assert (apis.status, apis.content_type, apis.json()["kind"], apis.json()["apiVersion"]) == (
        200, content_type, "APIGroupDiscoveryList", f"apidiscovery.k8s.io/{version}")
    assert apis.json()["items"][0]["metadata"] == {"name": "apiregistration.k8s.io", "creationTimestamp": None}


@pytest.mark.parametrize(("path", "accept"), [
    ("/api", "text/html"),
    ("/apis", f"{PROTOBUF};g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"),  # no protobuf schema here
    ("/api", "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList"),
    ("/api/v1", AGGREGATED_V2),  # group-version documents take no conversion
    ("/api/v1", "application/json;as=Table;v=v1;g=meta.k8s.io"),
])
async def test_discovery_406(server: Server, path: str, accept: str) -> None:
    resp = await server.request("GET", path, headers={"Accept": accept})
    if accept == "text/html":  # no type go-restful's /api route produces: its own 406, before the handler
        expected = kube.status(406, "NotAcceptable", "406: Not Acceptable\n\nAvailable representations: "
                               "application/json, application/yaml, application/vnd.kubernetes.protobuf", {})
    else:
        expected = kube.status(406, "NotAcceptable", kube.NOT_ACCEPTABLE)
    assert (resp.status, resp.json()) == (406, expected)


async def test_discovery_takes_only_get(server: Server) -> None:
    resp = await server.request("POST", "/api/v1", json={})
    assert (resp.status, resp.json()) == (405, kube.method_not_allowed())


@pytest.mark.parametrize(("path", "status"), [
    ("/apis/nope", None),  # no web service of kube's: Go's text 404
    ("/apis/nope/v1", None),
    ("/api/v2", kube.status(404, "NotFound", "the server could not find the requested resource", {})),  # go-restful's
    ("/apis/apps/v9", kube.status(404, "NotFound", "the server could not find the requested resource", {})),
])
async def test_unknown_groups_and_versions_are_404(server: Server, path: str, status: Any) -> None:
    resp = await server.request("GET", path)
    if status is None:
        assert (resp.status, resp.body) == (404, b"404 page not found\n")
    else:
        assert (resp.status, resp.json()) == (404, status)


async def test_named_group_discovery(server: Server) -> None:
    server.core.core.registry.add(Resource(
        group=GROUP, version="v1", resource="widgets", kind="Widget", singular="widget", namespaced=True,
        schema=JsonSchema(), short_names=("wd",), categories=("all",)))
    version = {"groupVersion": f"{GROUP}/v1", "version": "v1"}
    apis = await server.request("GET", "/apis")
    assert apis.json()["groups"][-1] == {"name": GROUP, "versions": [version], "preferredVersion": version}
    group = await server.request("GET", f"/apis/{GROUP}")
    assert (group.status, group.json()) == (200, {
        "kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [version], "preferredVersion": version})
    resources = await server.request("GET", f"/apis/{GROUP}/v1")
    doc = resources.json()
    assert (resources.status, doc["groupVersion"], doc["resources"][0] | {"storageVersionHash": "-"}) == (
        200, f"{GROUP}/v1", {"name": "widgets", "singularName": "widget", "namespaced": True, "kind": "Widget",
                             "verbs": ALL_VERBS, "shortNames": ["wd"], "categories": ["all"],
                             "storageVersionHash": "-"})
    aggregated = await server.request("GET", "/apis", headers={"Accept": AGGREGATED_V2})
    assert aggregated.json()["items"][-1:] == [{"metadata": {"name": GROUP, "creationTimestamp": None}, "versions": [
        {"version": "v1", "freshness": "Current", "resources": [{
            "resource": "widgets", "responseKind": {"group": GROUP, "version": "v1", "kind": "Widget"},
            "scope": "Namespaced", "singularResource": "widget", "verbs": ALL_VERBS, "shortNames": ["wd"],
            "categories": ["all"]}]}]}]


# kube-apiserver 1.28.7's storageVersionHash (the group version it stores each kind at), and none where it stores
# nothing.
@pytest.mark.parametrize(("path", "resource", "expected"), [
    ("/api/v1", "configmaps", "qFsyl6wFWjQ="),
    ("/apis/events.k8s.io/v1", "events", "r2yiGXH7wu8="),  # kept as core/v1 Events
    ("/apis/autoscaling/v1", "horizontalpodautoscalers", "qwQve8ut294="),  # as autoscaling/v2
    ("/apis/autoscaling/v2", "horizontalpodautoscalers", "qwQve8ut294="),
    ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", "jfWCUB31mvA="),  # as v1beta1
    ("/apis/discovery.k8s.io/v1", "endpointslices", "Nx3SIv6I0mE="),
    ("/apis/flowcontrol.apiserver.k8s.io/v1beta2", "flowschemas", "9NnFrw7ZEmA="),  # as v1beta3
    ("/apis/flowcontrol.apiserver.k8s.io/v1beta3", "flowschemas", "9NnFrw7ZEmA="),
    ("/api/v1", "bindings", None),
    ("/api/v1", "componentstatuses", None),
    ("/apis/authentication.k8s.io/v1", "tokenreviews", None),
    ("/apis/authorization.k8s.io/v1", "subjectaccessreviews", None),
])
async def test_storage_version_hash(server: Server, path: str, resource: str, expected: str | None) -> None:
    listed = (await server.request("GET", path)).json()["resources"]
    (entry,) = (r for r in listed if r["name"] == resource)
    assert entry.get("storageVersionHash") == expected


async def test_a_custom_resources_storage_version_hash_names_its_storage_version(server: Server) -> None:
    """Every served version of a CRD reports the hash of the one marked storage, as apiextensions-apiserver does."""
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    await server.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "metadata": {"name": "gizmos.hash.example.com"},
        "spec": {"group": "hash.example.com", "scope": "Namespaced",
                 "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
                 "versions": [{"name": "v2", "served": True, "storage": False, "schema": schema},
                              {"name": "v1", "served": True, "storage": True, "schema": schema}]}})
    stored = base64.b64encode(hashlib.sha256(b"hash.example.com/v1/Gizmo").digest()[:8]).decode()
    for version in ("v1", "v2"):
        for _ in range(500):
            resp = await server.request("GET", f"/apis/hash.example.com/{version}")
            if resp.status == 200:
                break
            await asyncio.sleep(0.01)
        assert [r.get("storageVersionHash") for r in resp.json()["resources"] if r["name"] == "gizmos"] == [stored]
