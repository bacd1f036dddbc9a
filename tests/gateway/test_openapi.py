"""OpenAPI documents against kube-apiserver's: the /openapi/v3 index, a group version's paths and
operation ids, the component schemas and their Kubernetes extensions, /openapi/v2 in gnostic's protobuf
encoding, the HTTP caching rules of kube-openapi's handlers, and kubectl itself reading them.

Expected values are kube-apiserver's (kubernetes api/openapi-spec/v3/api__v1_openapi.json, kube-openapi
handler3), except where a description comes from Capstan's own proto comments.
"""

from __future__ import annotations

import glob
import hashlib
import importlib
import os
import pkgutil
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from google.protobuf import descriptor_pool

import capstan.api
from capstan.cli.inprocess import InProcessClient
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.app import build_app, start_http
from gateway.openapi import comments, documents, gnostic, objectmeta, paths, roots, schemas, swagger
from server.auth.guard import unguarded
from server.kinds import BUILTIN, config
from server.kinds.services import services
from server.machinery.codec.wellknown import WELL_KNOWN as CODEC_WELL_KNOWN
from server.machinery.schema_hints import FIELDS, MESSAGES
from server.objects.core import Core
from server.registry.discovery import discover
from server.registry.resources import Registry
from storage import StoreOptions
from storage.lmdb import LmdbStore

Doc = dict[str, Any]

ROOT = Path(__file__).resolve().parents[2]
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
CORE = "io.k8s.api.core.v1."
STORAGE = "io.k8s.api.storage.v1."
REF = "#/components/schemas/"


def _discovered() -> core_pb2.DiscoverResponse:
    """The config kinds (namespaces, configmaps, secrets) only: the expectations below are theirs."""
    return discover(Registry(config.KINDS))


@pytest.fixture(scope="module")
def built() -> documents.Documents:
    return documents.build(_discovered(), version="v1.32.0")


@pytest.fixture(scope="module")
def v1(built: documents.Documents) -> Doc:
    doc: Doc = orjson.loads(built.group_versions["api/v1"].body)
    return doc


def _schema(doc: Doc, name: str) -> Doc:
    found: Doc = doc["components"]["schemas"][name]
    return found


# --- the index ---------------------------------------------------------------------------------------

def test_index_points_at_each_document_with_its_hash(built: documents.Documents) -> None:
    index = orjson.loads(built.index.body)
    assert sorted(index["paths"]) == ["api", "api/v1", "apis", "version"]
    for name, entry in index["paths"].items():
        expected = hashlib.sha512(built.group_versions[name].body).hexdigest().upper()
        assert entry == {"serverRelativeURL": f"/openapi/v3/{name}?hash={expected}"}


def test_a_group_gets_its_own_document() -> None:
    discovered = _discovered()
    widget = discovered.resources.add()
    widget.CopyFrom(discovered.resources[1])  # configmaps, served again as example.com/v1
    widget.group = "example.com"
    built = documents.build(discovered, version="v1.32.0")
    assert sorted(orjson.loads(built.index.body)["paths"]) == [
        "api", "api/v1", "apis", "apis/example.com", "apis/example.com/v1", "version"]
    doc = orjson.loads(built.group_versions["apis/example.com/v1"].body)
    assert doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/configmaps"]["get"]["operationId"] == (
        "listExampleComV1NamespacedConfigMap")
    # The message is served in two group versions, so its schema names both.
    assert _schema(doc, CORE + "ConfigMap")["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "ConfigMap", "version": "v1"},
        {"group": "example.com", "kind": "ConfigMap", "version": "v1"},
    ]


def _discovery_operation(operation_id: str, tag: str, description: str, kind: str) -> Doc:
    content = {media: {"schema": {"$ref": "#/components/schemas/" + META + kind}}
               for media in ("application/json", "application/vnd.kubernetes.protobuf", "application/yaml")}
    return {"get": {"description": description, "operationId": operation_id, "tags": [tag], "responses": {
        "200": {"content": content, "description": "OK"}, "401": {"description": "Unauthorized"}}}}


# The root documents as kube-apiserver 1.28 serves them (its /openapi/v3/apis/apps, api, apis and version).
ROOTS = [
    ("api", "/api/", _discovery_operation("getCoreAPIVersions", "core", "get available API versions", "APIVersions"),
     ["APIVersions", "ServerAddressByClientCIDR"]),
    ("apis", "/apis/", _discovery_operation("getAPIVersions", "apis", "get available API versions", "APIGroupList"),
     ["APIGroup", "APIGroupList", "GroupVersionForDiscovery", "ServerAddressByClientCIDR"]),
    ("apis/rbac.authorization.k8s.io", "/apis/rbac.authorization.k8s.io/", _discovery_operation(
        "getRbacAuthorizationAPIGroup", "rbacAuthorization", "get information of a group", "APIGroup"),
     ["APIGroup", "GroupVersionForDiscovery", "ServerAddressByClientCIDR"]),
    ("version", "/version/", {"get": {"description": "get the code version", "operationId": "getCodeVersion",
                                      "tags": ["version"], "responses": {"200": {"content": {"application/json": {
                                          "schema": {"$ref": "#/components/schemas/" + roots.VERSION_INFO}}},
                                          "description": "OK"}, "401": {"description": "Unauthorized"}}}}, None),
]


@pytest.mark.parametrize(("name", "path", "item", "kinds"), ROOTS, ids=[r[0] for r in ROOTS])
def test_root_documents(name: str, path: str, item: Doc, kinds: list[str] | None) -> None:
    discovered = _discovered()
    role = discovered.resources.add()
    role.CopyFrom(discovered.resources[1])
    role.group = "rbac.authorization.k8s.io"
    doc = orjson.loads(documents.build(discovered, version="v1.28.15").group_versions[name].body)
    assert doc["paths"] == {path: item}
    assert doc["info"] == {"title": "Kubernetes", "version": "v1.28.15"} and doc["openapi"] == "3.0.0"
    assert doc["components"]["securitySchemes"] == {"BearerToken": {
        "description": "Bearer Token authentication", "in": "header", "name": "authorization", "type": "apiKey"}}
    schemas_found = doc["components"]["schemas"]
    if kinds is None:
        assert schemas_found == {roots.VERSION_INFO: roots.VERSION_INFO_SCHEMA}
        assert schemas_found[roots.VERSION_INFO]["required"] == [
            "major", "minor", "gitVersion", "gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler",
            "platform"]
    else:
        assert sorted(schemas_found) == [META + kind for kind in kinds]
        assert schemas_found[META + kinds[0]]["properties"]["kind"]["type"] == "string"


def test_documents_are_rebuilt_only_when_discovery_changes() -> None:
    cache = documents.Cache(version="v1.32.0")
    first = cache.get(_discovered())
    assert cache.get(_discovered()) is first
    changed = _discovered()
    changed.resources[0].short_names.append("nss")
    assert cache.get(changed) is not first


# --- paths and operations ----------------------------------------------------------------------------

NS = "/api/v1/namespaces/{namespace}"

OPERATIONS = [
    # (path, method, operationId, x-kubernetes-action, kind)
    ("/api/v1/", "get", "getCoreV1APIResources", None, None),
    (f"{NS}/configmaps", "get", "listCoreV1NamespacedConfigMap", "list", "ConfigMap"),
    (f"{NS}/configmaps", "post", "createCoreV1NamespacedConfigMap", "post", "ConfigMap"),
    (f"{NS}/configmaps", "delete", "deleteCoreV1CollectionNamespacedConfigMap", "deletecollection", "ConfigMap"),
    (f"{NS}/configmaps/{{name}}", "get", "readCoreV1NamespacedConfigMap", "get", "ConfigMap"),
    (f"{NS}/configmaps/{{name}}", "put", "replaceCoreV1NamespacedConfigMap", "put", "ConfigMap"),
    (f"{NS}/configmaps/{{name}}", "patch", "patchCoreV1NamespacedConfigMap", "patch", "ConfigMap"),
    (f"{NS}/configmaps/{{name}}", "delete", "deleteCoreV1NamespacedConfigMap", "delete", "ConfigMap"),
    ("/api/v1/configmaps", "get", "listCoreV1ConfigMapForAllNamespaces", "list", "ConfigMap"),
    ("/api/v1/watch/namespaces/{namespace}/configmaps", "get", "watchCoreV1NamespacedConfigMapList", "watchlist",
     "ConfigMap"),
    ("/api/v1/watch/namespaces/{namespace}/configmaps/{name}", "get", "watchCoreV1NamespacedConfigMap", "watch",
     "ConfigMap"),
    ("/api/v1/watch/configmaps", "get", "watchCoreV1ConfigMapListForAllNamespaces", "watchlist", "ConfigMap"),
    (f"{NS}/secrets/{{name}}", "get", "readCoreV1NamespacedSecret", "get", "Secret"),
    ("/api/v1/secrets", "get", "listCoreV1SecretForAllNamespaces", "list", "Secret"),
    ("/api/v1/namespaces", "get", "listCoreV1Namespace", "list", "Namespace"),
    ("/api/v1/namespaces", "post", "createCoreV1Namespace", "post", "Namespace"),
    ("/api/v1/namespaces/{name}", "get", "readCoreV1Namespace", "get", "Namespace"),
    ("/api/v1/namespaces/{name}", "delete", "deleteCoreV1Namespace", "delete", "Namespace"),
    ("/api/v1/namespaces/{name}/status", "get", "readCoreV1NamespaceStatus", "get", "Namespace"),
    ("/api/v1/namespaces/{name}/status", "patch", "patchCoreV1NamespaceStatus", "patch", "Namespace"),
    ("/api/v1/namespaces/{name}/finalize", "put", "replaceCoreV1NamespaceFinalize", "put", "Namespace"),
    ("/api/v1/watch/namespaces", "get", "watchCoreV1NamespaceList", "watchlist", "Namespace"),
    ("/api/v1/watch/namespaces/{name}", "get", "watchCoreV1Namespace", "watch", "Namespace"),
]


@pytest.mark.parametrize(("path", "method", "operation_id", "action", "kind"), OPERATIONS)
def test_operation(v1: Doc, path: str, method: str, operation_id: str, action: str | None, kind: str | None) -> None:
    op = v1["paths"][path][method]
    assert op["operationId"] == operation_id
    assert op["tags"] == ["core_v1"]
    assert op.get("x-kubernetes-action") == action
    gvk = {"group": "", "kind": kind, "version": "v1"} if kind else None
    assert op.get("x-kubernetes-group-version-kind") == gvk


def test_every_operation_is_listed(v1: Doc) -> None:
    """Namespaces have no deletecollection verb, so no DELETE on the collection."""
    listed = {(path, method) for path, item in v1["paths"].items() for method in item if method != "parameters"}
    expected = {(path, method) for path, method, *_ in OPERATIONS}
    others = {(f"{NS}/secrets", m) for m in ("get", "post", "delete")} | {
        (f"{NS}/secrets/{{name}}", m) for m in ("put", "patch", "delete")} | {
        ("/api/v1/watch/namespaces/{namespace}/secrets", "get"), ("/api/v1/watch/namespaces/{namespace}/secrets/{name}",
                                                                  "get"),
        ("/api/v1/watch/secrets", "get"), ("/api/v1/namespaces/{name}", "put"), ("/api/v1/namespaces/{name}", "patch"),
        ("/api/v1/namespaces/{name}/status", "put")}
    assert listed == expected | others


PARAMETERS = [
    # (path, method or "" for the path's shared parameters, parameter names)
    (f"{NS}/configmaps/{{name}}", "", ["name", "namespace", "pretty"]),
    (f"{NS}/configmaps/{{name}}", "get", []),
    (f"{NS}/configmaps/{{name}}", "put", ["dryRun", "fieldManager", "fieldValidation"]),
    (f"{NS}/configmaps/{{name}}", "patch", ["dryRun", "fieldManager", "fieldValidation", "force"]),
    (f"{NS}/configmaps/{{name}}", "delete", ["dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy"]),
    (f"{NS}/configmaps", "", ["namespace", "pretty"]),
    (f"{NS}/configmaps", "get", ["allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
                                 "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds",
                                 "watch"]),
    (f"{NS}/configmaps", "post", ["dryRun", "fieldManager", "fieldValidation"]),
    # A path with one operation lists every parameter on the path, as kube-openapi does.
    ("/api/v1/configmaps", "", ["allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
                                "pretty", "resourceVersion", "resourceVersionMatch", "sendInitialEvents",
                                "timeoutSeconds", "watch"]),
    ("/api/v1/namespaces/{name}/finalize", "", ["dryRun", "fieldManager", "fieldValidation", "name", "pretty"]),
    ("/api/v1/namespaces", "", ["pretty"]),
]


@pytest.mark.parametrize(("path", "method", "names"), PARAMETERS)
def test_parameters(v1: Doc, path: str, method: str, names: list[str]) -> None:
    holder = v1["paths"][path][method] if method else v1["paths"][path]
    assert [p["name"] for p in holder.get("parameters", [])] == names


def test_parameter_shape(v1: Doc) -> None:
    shared = v1["paths"][f"{NS}/configmaps/{{name}}"]["parameters"]
    assert shared[0] == {"description": "name of the ConfigMap", "in": "path", "name": "name", "required": True,
                         "schema": {"type": "string", "uniqueItems": True}}
    assert shared[1]["description"] == "object name and auth scope, such as for teams and projects"
    field_validation = v1["paths"][f"{NS}/configmaps"]["post"]["parameters"][2]
    assert (field_validation["in"], field_validation["schema"]) == ("query", {"type": "string", "uniqueItems": True})
    patch_manager = v1["paths"][f"{NS}/configmaps/{{name}}"]["patch"]["parameters"][1]
    assert "required for apply requests" in patch_manager["description"]


@pytest.fixture(scope="module")
def every_kind() -> documents.Documents:
    return documents.build(discover(Registry(BUILTIN)), version="v1.28.7")


@pytest.mark.parametrize(("name", "prop"), [
    (CORE + "ServiceSpec", "selector"), (CORE + "PodSpec", "nodeSelector"),
    (CORE + "ReplicationControllerSpec", "selector"),
])
def test_atomic_maps_say_so(every_kind: documents.Documents, name: str, prop: str) -> None:
    # kube's +mapType=atomic maps: replaced whole by server-side apply, as kube-apiserver 1.28 publishes them.
    v1: Doc = orjson.loads(every_kind.group_versions["api/v1"].body)
    assert _schema(v1, name)["properties"][prop]["x-kubernetes-map-type"] == "atomic"


@pytest.mark.parametrize(("document", "item", "answer"), [
    # kinds whose registry store returns the deleted object document it as kube's installer does
    ("api/v1", f"{NS}/pods/{{name}}", CORE + "Pod"),
    ("api/v1", f"{NS}/services/{{name}}", CORE + "Service"),
    ("api/v1", f"{NS}/persistentvolumeclaims/{{name}}", CORE + "PersistentVolumeClaim"),
    ("api/v1", "/api/v1/persistentvolumes/{name}", CORE + "PersistentVolume"),
    ("api/v1", f"{NS}/serviceaccounts/{{name}}", CORE + "ServiceAccount"),
    ("api/v1", f"{NS}/podtemplates/{{name}}", CORE + "PodTemplate"),
    ("api/v1", f"{NS}/resourcequotas/{{name}}", CORE + "ResourceQuota"),
    ("apis/storage.k8s.io/v1", "/apis/storage.k8s.io/v1/storageclasses/{name}", STORAGE + "StorageClass"),
    ("apis/storage.k8s.io/v1", "/apis/storage.k8s.io/v1/csidrivers/{name}", STORAGE + "CSIDriver"),
    ("apis/storage.k8s.io/v1", "/apis/storage.k8s.io/v1/csinodes/{name}", STORAGE + "CSINode"),
    ("apis/storage.k8s.io/v1", "/apis/storage.k8s.io/v1/volumeattachments/{name}", STORAGE + "VolumeAttachment"),
    # the rest answer a Status; a namespace too in the document (its REST wraps the store that answers the object)
    ("api/v1", f"{NS}/configmaps/{{name}}", META + "Status"),
    ("api/v1", "/api/v1/namespaces/{name}", META + "Status"),
    ("api/v1", "/api/v1/nodes/{name}", META + "Status"),
    ("apis/apps/v1", "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", META + "Status"),
    ("apis/storage.k8s.io/v1", "/apis/storage.k8s.io/v1/namespaces/{namespace}/csistoragecapacities/{name}",
     META + "Status"),
])
def test_a_deletes_answer_is_documented_as_kubes(every_kind: documents.Documents, document: str, item: str,
                                                 answer: str) -> None:
    doc = orjson.loads(every_kind.group_versions[document].body)
    responses = doc["paths"][item]["delete"]["responses"]
    assert {code: responses[code]["content"]["application/json"]["schema"] for code in ("200", "202")} == {
        "200": {"$ref": REF + answer}, "202": {"$ref": REF + answer}}


def test_bodies_and_responses(v1: Doc) -> None:
    item = v1["paths"][f"{NS}/configmaps/{{name}}"]
    assert item["put"]["requestBody"] == {
        "content": {"*/*": {"schema": {"$ref": REF + CORE + "ConfigMap"}}}, "required": True}
    assert item["patch"]["requestBody"]["content"] == {
        media: {"schema": {"$ref": REF + META + "Patch"}} for media in (
            "application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json",
            "application/strategic-merge-patch+json")}
    assert item["delete"]["requestBody"] == {"content": {"*/*": {"schema": {"$ref": REF + META + "DeleteOptions"}}}}
    assert sorted(item["delete"]["responses"]) == ["200", "202", "401"]
    deleted = item["delete"]["responses"]["200"]["content"]["application/json"]
    assert deleted["schema"] == {"$ref": REF + META + "Status"}
    assert item["put"]["responses"]["201"]["description"] == "Created"
    listed = v1["paths"][f"{NS}/configmaps"]["get"]["responses"]["200"]["content"]
    assert sorted(listed) == ["application/json", "application/json;stream=watch",
                              "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf;stream=watch",
                              "application/yaml"]
    assert listed["application/json"]["schema"] == {"$ref": REF + CORE + "ConfigMapList"}
    watched = v1["paths"]["/api/v1/watch/configmaps"]["get"]["responses"]["200"]["content"]["application/json"]
    assert watched["schema"] == {"$ref": REF + META + "WatchEvent"}


def test_every_ref_resolves(built: documents.Documents) -> None:
    for body in [d.body for d in built.group_versions.values()]:
        doc = orjson.loads(body)
        refs = set(re.findall(rb'"\$ref":"#/components/schemas/([^"]+)"', body))
        assert {r.decode() for r in refs} <= set(doc["components"]["schemas"])


@pytest.mark.parametrize(("group", "version", "gv", "tag"), [
    ("", "v1", "CoreV1", "core_v1"),
    ("apps", "v1beta2", "AppsV1beta2", "apps_v1beta2"),
    ("rbac.authorization.k8s.io", "v1", "RbacAuthorizationV1", "rbacAuthorization_v1"),
    ("stable.example.com", "v1", "StableExampleComV1", "stableExampleCom_v1"),
])
def test_group_version_names(group: str, version: str, gv: str, tag: str) -> None:
    assert (paths.group_version_id(group, version), paths.tag(group, version)) == (gv, tag)


# --- schemas -----------------------------------------------------------------------------------------

def test_config_map_schema(v1: Doc) -> None:
    schema = _schema(v1, CORE + "ConfigMap")
    assert schema["description"] == "ConfigMap holds configuration data for pods to consume."
    assert schema["type"] == "object"
    assert schema["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "ConfigMap", "version": "v1"}]
    props = schema["properties"]
    assert sorted(props) == ["apiVersion", "binaryData", "data", "immutable", "kind", "metadata"]
    assert props["apiVersion"]["type"] == props["kind"]["type"] == "string"
    assert props["data"] == {"additionalProperties": {"default": "", "type": "string"},
                             "description": "Data contains the configuration data. Each key must consist of "
                                            "alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte "
                                            "sequences must use the BinaryData field. The keys stored in Data must "
                                            "not overlap with the keys in the BinaryData field, this is enforced "
                                            "during validation process.",
                             "type": "object"}
    assert props["binaryData"]["additionalProperties"] == {"format": "byte", "type": "string"}
    assert props["immutable"] == {"description": "Immutable, if set to true, ensures that data stored in the ConfigMap "
                                                 "cannot be updated (only object metadata can be modified). If not set "
                                                 "to true, the field can be modified at any time. Defaulted to nil.",
                                  "type": "boolean"}
    assert props["metadata"] == {"allOf": [{"$ref": REF + META + "ObjectMeta"}], "default": {},
                                 "description": schemas.OBJECT_META}
    assert "required" not in schema


SCHEMA_FIELDS = [
    # (schema, property, expected)
    (CORE + "Secret", "data", {"additionalProperties": {"format": "byte", "type": "string"},
                               "description": "Data contains the secret data. Each key must consist of alphanumeric "
                                              "characters, '-', '_' or '.'. The serialized form of the secret data is "
                                              "a base64 encoded string, representing the arbitrary (possibly "
                                              "non-string) data value here. Described in "
                                              "https://tools.ietf.org/html/rfc4648#section-4",
                               "type": "object"}),
    (CORE + "Secret", "type", {"description": "Used to facilitate programmatic handling of secret data. More info: "
                                              "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
                               "type": "string"}),
    (CORE + "Namespace", "spec", {"allOf": [{"$ref": REF + CORE + "NamespaceSpec"}], "default": {},
                                  "description": "Spec defines the behavior of the Namespace. More info: "
                                  "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                                  "api-conventions.md#spec-and-status"}),
    (CORE + "ConfigMapList", "items", {"description": "Items is the list of ConfigMaps.",
                                       "items": {"allOf": [{"$ref": REF + CORE + "ConfigMap"}], "default": {}},
                                       "type": "array"}),
    # a Time or RawExtension that is no pointer Go prints as any struct: its default is {}, as kube's
    (CORE + "NamespaceCondition", "lastTransitionTime", {"allOf": [{"$ref": REF + META + "Time"}], "default": {}}),
    # ObjectMeta carries kube's descriptions (gateway/openapi/objectmeta.py), a described $ref wrapped in allOf.
    (META + "ObjectMeta", "generation", {"description": objectmeta.FIELDS["generation"], "format": "int64",
                                         "type": "integer"}),
    (META + "ObjectMeta", "creationTimestamp", {"allOf": [{"$ref": REF + META + "Time"}], "default": {},
                                                "description": objectmeta.FIELDS["creationTimestamp"]}),
    (META + "ObjectMeta", "labels", {"additionalProperties": {"default": "", "type": "string"},
                                     "description": objectmeta.FIELDS["labels"], "type": "object"}),
    (META + "Status", "code", {"description": "Suggested HTTP return code for this status, 0 if not set.",
                               "format": "int32",
                               "type": "integer"}),
    (META + "Status", "metadata", {"allOf": [{"$ref": REF + META + "ListMeta"}], "default": {},
                                   "description": schemas.LIST_META}),
    (META + "ManagedFieldsEntry", "fieldsV1", {
        "allOf": [{"$ref": REF + META + "FieldsV1"}],
        "description": 'FieldsV1 holds the first JSON version format as described in the "FieldsV1" type.'}),
    (META + "APIResource", "verbs", {
        "description": "verbs is a list of supported kube verbs (this includes get, list, watch, create, update, "
                       "patch, delete, deletecollection, and proxy)",
        "items": {"default": "", "type": "string"}, "type": "array"}),
    (META + "APIResource", "namespaced", {"default": False,
                                          "description": "namespaced indicates if a resource is namespaced or not.",
                                          "type": "boolean"}),
    (META + "WatchEvent", "object", {
        "allOf": [{"$ref": REF + "io.k8s.apimachinery.pkg.runtime.RawExtension"}], "default": {},
        "description": "Object is:\n * If Type is Added or Modified: the new state of the object.\n"
                       " * If Type is Deleted: the state of the object immediately before deletion.\n"
                       " * If Type is Error: *Status is recommended; other types may make sense\n"
                       "   depending on context."}),
    # Required scalars Go always prints get their zero value as default.
    (META + "OwnerReference", "uid", {
        "default": "", "description": "UID of the referent. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids", "type": "string"}),
    (META + "OwnerReference", "controller",
     {"description": "If true, this reference points to the managing controller.", "type": "boolean"}),
]


@pytest.mark.parametrize(("name", "prop", "expected"), SCHEMA_FIELDS)
def test_schema_field(v1: Doc, name: str, prop: str, expected: Doc) -> None:
    assert _schema(v1, name)["properties"][prop] == expected


WELL_KNOWN_SCHEMAS = [
    (META + "Time", {"format": "date-time", "type": "string"}),
    (META + "FieldsV1", {"type": "object"}),
    ("io.k8s.apimachinery.pkg.runtime.RawExtension", {"type": "object"}),
]


@pytest.mark.parametrize(("name", "shape"), WELL_KNOWN_SCHEMAS)
def test_well_known_schema(v1: Doc, name: str, shape: Doc) -> None:
    found = dict(_schema(v1, name))
    assert found.pop("description")
    assert found == shape


def test_int_or_string_and_quantity_are_published_as_kube_does() -> None:
    assert schemas.WELL_KNOWN["k8s.io.apimachinery.pkg.util.intstr.IntOrString"]["oneOf"] == [
        {"type": "integer"}, {"type": "string"}]
    assert schemas.WELL_KNOWN["k8s.io.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    assert schemas.WELL_KNOWN["k8s.io.apimachinery.pkg.api.resource.Quantity"]["oneOf"] == [
        {"type": "string"}, {"type": "number"}]


def test_every_codec_well_known_type_has_a_schema() -> None:
    assert set(CODEC_WELL_KNOWN) <= set(schemas.WELL_KNOWN) | set(schemas.INLINE)


GVKS = [
    (CORE + "Namespace", [("", "Namespace", "v1")]),
    (CORE + "NamespaceList", [("", "NamespaceList", "v1")]),
    (CORE + "Secret", [("", "Secret", "v1")]),
    (META + "Status", [("", "Status", "v1")]),
    (META + "DeleteOptions", [("", "DeleteOptions", "v1")]),
    (META + "WatchEvent", [("", "WatchEvent", "v1")]),
    (META + "APIResourceList", [("", "APIResourceList", "v1")]),
    (META + "ObjectMeta", []),
    (CORE + "NamespaceSpec", []),
]


@pytest.mark.parametrize(("name", "gvks"), GVKS)
def test_group_version_kind_extension(v1: Doc, name: str, gvks: list[tuple[str, str, str]]) -> None:
    found = _schema(v1, name).get("x-kubernetes-group-version-kind", [])
    assert [(g["group"], g["kind"], g["version"]) for g in found] == gvks


def test_type_meta_only_on_kinds(v1: Doc) -> None:
    for name in (CORE + "Namespace", CORE + "SecretList", META + "Status", META + "DeleteOptions",
                 META + "APIResourceList"):
        assert {"apiVersion", "kind"} <= set(_schema(v1, name)["properties"]), name
    for name in (META + "ObjectMeta", META + "WatchEvent", CORE + "NamespaceSpec"):
        assert "apiVersion" not in _schema(v1, name)["properties"], name


EXTENSIONS = [
    # (schema, property, the x-kubernetes-* keys it carries)
    (META + "ObjectMeta", "finalizers", {"x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge"}),
    (META + "ObjectMeta", "ownerReferences", {
        "x-kubernetes-list-map-keys": ["uid"], "x-kubernetes-list-type": "map", "x-kubernetes-patch-merge-key": "uid",
        "x-kubernetes-patch-strategy": "merge"}),
    (META + "ObjectMeta", "managedFields", {"x-kubernetes-list-type": "atomic"}),
    (META + "ObjectMeta", "labels", {}),
    (CORE + "NamespaceSpec", "finalizers", {"x-kubernetes-list-type": "atomic"}),
    (CORE + "NamespaceStatus", "conditions", {
        "x-kubernetes-list-map-keys": ["type"], "x-kubernetes-list-type": "map", "x-kubernetes-patch-merge-key": "type",
        "x-kubernetes-patch-strategy": "merge"}),
    (META + "StatusDetails", "causes", {"x-kubernetes-list-type": "atomic"}),
    (META + "DeleteOptions", "dryRun", {"x-kubernetes-list-type": "atomic"}),
    (CORE + "ConfigMapList", "items", {}),
]


@pytest.mark.parametrize(("name", "prop", "extensions"), EXTENSIONS)
def test_list_and_patch_extensions(v1: Doc, name: str, prop: str, extensions: Doc) -> None:
    found = _schema(v1, name)["properties"][prop]
    assert {k: v for k, v in found.items() if k.startswith("x-kubernetes-")} == extensions


REQUIRED = [
    (META + "OwnerReference", ["apiVersion", "kind", "name", "uid"], "atomic"),
    (META + "ObjectMeta", None, None),
    (META + "WatchEvent", ["type", "object"], None),
    (CORE + "NamespaceCondition", ["type", "status"], None),
    (CORE + "SecretList", ["items"], None),
    (META + "APIResourceList", ["groupVersion", "resources"], None),
]


@pytest.mark.parametrize(("name", "required", "map_type"), REQUIRED)
def test_required_and_map_type(v1: Doc, name: str, required: list[str] | None, map_type: str | None) -> None:
    schema = _schema(v1, name)
    assert (schema.get("required"), schema.get("x-kubernetes-map-type")) == (required, map_type)


def test_every_hint_names_a_real_message_and_field() -> None:
    for module in pkgutil.walk_packages(capstan.api.__path__, "capstan.api."):  # hints name kinds not yet served
        importlib.import_module(module.name)
    pool = descriptor_pool.Default()
    for message, field in FIELDS:
        assert field in pool.FindMessageTypeByName(message).fields_by_name, (message, field)
    for message, hint in MESSAGES.items():
        fields = pool.FindMessageTypeByName(message).fields_by_name
        assert set(hint.required) <= set(fields), message


# --- comments ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("comment", "description"), [
    (" One line.\n", "One line."),
    (" Two\n lines.\n", "Two lines."),
    (" First.\n\n Second\n paragraph.\n", "First.\n\nSecond paragraph."),
    (" Upstream style.\n +optional\n +listType=atomic\n", "Upstream style."),
    (" Kept.\n TODO: not this\n ---\n Nor this.\n", "Kept."),
    ("", ""),
    # indented lines (examples, list items' continuations) stay lines, with their indentation, as openapi-gen keeps
    # them: the line before loses its trailing space, or the blank line one of its newlines
    (" For example:\n\n \t{\n \t  a: 1\n \t}\n\n After.\n", "For example:\n\n\t{\n\t  a: 1\n\t}\n\nAfter."),
    (" Values:\n   - one\n   - two\n then more\n text.\n", "Values:\n  - one\n  - two\nthen more text."),
    (" Ends indented:\n \tx\n", "Ends indented:\n\tx"),
    (' A \\"quoted\\" word, an ACV --- within a line.\n', 'A "quoted" word, an ACV --- within a line.'),
])
def test_comment_cleaning(comment: str, description: str) -> None:
    assert comments.clean(comment) == description


def test_comments_come_from_the_descriptor_set() -> None:
    loaded = comments.load()
    assert loaded.message("k8s.io.api.core.v1.ConfigMap") == "ConfigMap holds configuration data for pods to consume."
    assert loaded.field("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers") == (
        "Deletion waits until this list is empty.")
    # A detached comment (a note followed by a blank line) is not a description.
    assert loaded.field("k8s.io.api.core.v1.NamespaceCondition", "type") == "Type of namespace controller condition."


# --- OpenAPI v2 ----------------------------------------------------------------------------------------

def test_swagger_document(built: documents.Documents) -> None:
    doc = orjson.loads(built.swagger.body)
    assert (doc["swagger"], doc["info"]) == ("2.0", {"title": "Kubernetes", "version": "v1.32.0"})
    assert doc["definitions"][CORE + "ConfigMap"]["properties"]["metadata"] == {
        "$ref": "#/definitions/" + META + "ObjectMeta", "default": {}, "description": schemas.OBJECT_META}
    put = doc["paths"][f"{NS}/configmaps/{{name}}"]["put"]
    assert put["consumes"] == ["*/*"]
    assert put["parameters"][-1] == {"in": "body", "name": "body", "required": True,
                                     "schema": {"$ref": "#/definitions/" + CORE + "ConfigMap"}}
    assert put["responses"]["200"] == {"description": "OK", "schema": {"$ref": "#/definitions/" + CORE + "ConfigMap"}}
    shared = doc["paths"][f"{NS}/configmaps/{{name}}"]["parameters"][0]
    assert shared == {"description": "name of the ConfigMap", "in": "path", "name": "name", "required": True,
                      "type": "string", "uniqueItems": True}
    assert swagger.schema_v2(schemas.WELL_KNOWN["k8s.io.apimachinery.pkg.util.intstr.IntOrString"])["type"] == "string"
    # kube's v2 document also holds the discovery and version paths, and requires its bearer token scheme
    assert {"/api/", "/apis/", "/version/"} <= set(doc["paths"])
    assert doc["paths"]["/version/"]["get"]["operationId"] == "getCodeVersion"
    assert doc["securityDefinitions"] == {"BearerToken": {
        "description": "Bearer Token authentication", "in": "header", "name": "authorization", "type": "apiKey"}}
    assert doc["security"] == [{"BearerToken": []}]


# Golden bytes from gnostic's OpenAPIv2.proto field numbers.
GNOSTIC = [
    ({"type": "string"}, "b201" "08" "0a06" + b"string".hex()),  # Schema.type(22) = TypeItem{value(1)}
    ({"$ref": "#/definitions/X", "description": "d", "default": {}},
     "0a0f" + b"#/definitions/X".hex() + "2201" + b"d".hex() + "2a05" + "1203" + b"{}\n".hex()),
    ({"x-kubernetes-list-type": "set"},  # vendor_extension(31) = NamedAny{name(1), value(2) = Any{yaml(2)}}
     "fa01" "22" "0a16" + b"x-kubernetes-list-type".hex() + "1208" "1206" + b'"set"\n'.hex()),
]


@pytest.mark.parametrize(("schema", "encoded"), GNOSTIC)
def test_gnostic_schema_encoding(schema: Doc, encoded: str) -> None:
    assert gnostic.schema(schema).hex() == encoded


def _fields(data: bytes) -> list[tuple[int, bytes]]:
    """A protobuf message's length-delimited fields as (field number, bytes); varint fields are skipped."""
    out: list[tuple[int, bytes]] = []
    i = 0
    while i < len(data):
        key, i = _read_varint(data, i)
        value, i = _read_varint(data, i)
        if key & 7 == 2:
            out.append((key >> 3, data[i:i + value]))
            i += value
    return out


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if byte < 0x80:
            return value, i


def _first_name(pair: bytes) -> str:
    """The name (field 1) of a Named* pair."""
    return dict(_fields(pair))[1].decode()


def test_swagger_protobuf_holds_the_json_document(built: documents.Documents) -> None:
    doc = orjson.loads(built.swagger.body)
    fields = dict(_fields(built.swagger_protobuf))
    assert fields[1] == b"2.0"
    info = dict(_fields(fields[2]))
    assert (info[1], info[2]) == (b"Kubernetes", b"v1.32.0")
    assert [_first_name(v) for n, v in _fields(fields[8]) if n == 2] == sorted(doc["paths"])
    assert [_first_name(v) for n, v in _fields(fields[9]) if n == 1] == sorted(doc["definitions"])
    # security (12): SecurityRequirement{NamedStringArray{name, StringArray{}}}; security_definitions (13):
    # SecurityDefinitions{NamedSecurityDefinitionsItem{name, SecurityDefinitionsItem{api_key_security (2):
    # ApiKeySecurity{type, name, in, description}}}}
    requirement = dict(_fields(dict(_fields(fields[12]))[1]))
    assert requirement == {1: b"BearerToken", 2: b""}
    named = dict(_fields(dict(_fields(fields[13]))[1]))
    assert named[1] == b"BearerToken"
    api_key = dict(_fields(dict(_fields(named[2]))[2]))
    assert api_key == {1: b"apiKey", 2: b"authorization", 3: b"header", 4: b"Bearer Token authentication"}


# --- HTTP ----------------------------------------------------------------------------------------------

@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    client = InProcessClient(unguarded(Core(store, Registry(BUILTIN))))
    runner, port = await start_http(build_app(client), "127.0.0.1", 0)
    session = aiohttp.ClientSession()
    try:
        yield session, f"http://127.0.0.1:{port}"
    finally:
        await session.close()
        await runner.cleanup()
        await client.close()
        await store.close()


async def test_http_index_and_document(http: tuple[aiohttp.ClientSession, str]) -> None:
    session, url = http
    async with session.get(url + "/openapi/v3") as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "application/json"
        body = await resp.read()
        assert resp.headers["ETag"] == f'"{hashlib.sha512(body).hexdigest().upper()}"'
        index = orjson.loads(body)
    async with session.get(url + "/openapi/v3", headers={"If-None-Match": resp.headers["ETag"]}) as again:
        assert again.status == 304
    relative = index["paths"]["api/v1"]["serverRelativeURL"]
    async with session.get(url + relative, headers={"Accept": "application/json"}) as resp:
        assert resp.status == 200
        body = await resp.read()
        assert relative.endswith("?hash=" + hashlib.sha512(body).hexdigest().upper())
        assert (resp.headers["Cache-Control"], resp.headers["Vary"]) == ("public, immutable", "Accept")
        assert orjson.loads(body)["openapi"] == "3.0.0"
    async with session.get(url + "/openapi/v3/api/v1") as resp:
        assert resp.status == 200
        assert "Cache-Control" not in resp.headers


@pytest.mark.parametrize(("path", "accept", "status"), [
    ("/openapi/v3/api/v1?hash=0123", "application/json", 301),
    ("/openapi/v3/apis/example.com/v1", "application/json", 404),
    ("/openapi/v3/api/v1", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf", 406),
    ("/openapi/v2", "text/plain", 406),
])
async def test_http_refusals(http: tuple[aiohttp.ClientSession, str], path: str, accept: str, status: int) -> None:
    session, url = http
    async with session.get(url + path, headers={"Accept": accept}, allow_redirects=False) as resp:
        assert resp.status == status
        if status == 301:
            assert re.fullmatch(r"/openapi/v3/api/v1\?hash=[0-9A-F]{128}", resp.headers["Location"])
        if status == 404:  # kube's OpenAPI v3 handler writes a bare 404
            assert await resp.read() == b""


SWAGGER_PB = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


@pytest.mark.parametrize(("accept", "content_type"), [
    ("application/json", "application/json"),
    ("application/com.github.proto-openapi.spec.v2@v1.0+protobuf", SWAGGER_PB),  # what client-go sends
    (SWAGGER_PB, SWAGGER_PB),
])
async def test_http_swagger(http: tuple[aiohttp.ClientSession, str], accept: str, content_type: str) -> None:
    session, url = http
    async with session.get(url + "/openapi/v2", headers={"Accept": accept}) as resp:
        assert (resp.status, resp.headers["Content-Type"]) == (200, content_type)
        body = await resp.read()
    if content_type == "application/json":
        assert orjson.loads(body)["swagger"] == "2.0"
    else:
        assert dict(_fields(body))[1] == b"2.0"


# --- kubectl -----------------------------------------------------------------------------------------

def _kubectls() -> list[str]:
    """Every kubectl on PATH; gcloud installs one binary per minor version beside its dispatcher."""
    found = shutil.which("kubectl")
    if found is None:
        return []
    versioned = sorted(glob.glob(os.path.join(os.path.dirname(os.path.realpath(found)), "kubectl.1.*")))
    return versioned or [found]


LISTENING = re.compile(r"HTTP http://127\.0\.0\.1:(\d+) ")


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A real `capstan serve` and a kubeconfig for it."""
    data = tmp_path_factory.mktemp("serve") / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "capstan", "serve", "--insecure", "--data-dir", str(data), "--http-port", "0",
         "--grpc-port", "0", "--sync", "false"],
        cwd=ROOT, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if LISTENING.search(line):
            break
    else:
        raise AssertionError(f"capstan serve exited with {proc.wait()} before listening")
    try:
        config = data.parent / "kubeconfig"
        printed = subprocess.run([sys.executable, "-m", "capstan", "kubeconfig", "--data-dir", str(data)], cwd=ROOT,
                                 capture_output=True, text=True, check=True, timeout=60)
        config.write_text(printed.stdout)
        yield config
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


def _kubectl(binary: str, config: Path, cache: Path, *args: str, stdin: str | None = None) -> str:
    out = subprocess.run([binary, f"--kubeconfig={config}", f"--cache-dir={cache}", *args], input=stdin,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: b\n"


@pytest.mark.parametrize("binary", [pytest.param(b, id=os.path.basename(b)) for b in _kubectls()]
                         or [pytest.param("", marks=pytest.mark.skip(reason="kubectl not found"))])
def test_kubectl(binary: str, kubeconfig: Path, tmp_path: Path) -> None:
    """kubectl explain reads the v3 documents; create validates against them (kubectl 1.28 also loads v2)."""
    explained = _kubectl(binary, kubeconfig, tmp_path, "explain", "configmap")
    assert "ConfigMap holds configuration data for pods to consume." in explained
    assert re.search(r"data\s+<map\[string\]string>\n\s+Data contains the configuration data\.", explained)
    field = _kubectl(binary, kubeconfig, tmp_path, "explain", "configmap.metadata.name")
    assert re.search(r"FIELD:\s+name <string>", field)
    assert "Name must be unique within a namespace." in field  # kube's ObjectMeta text
    name = "c-" + re.sub(r"[^0-9a-z]", "-", os.path.basename(binary).lower())
    created = _kubectl(binary, kubeconfig, tmp_path, "create", "-f", "-", stdin=CONFIG_MAP.format(name=name))
    assert created.strip() == f"configmap/{name} created"
    _kubectl(binary, kubeconfig, tmp_path, "delete", "configmap", name)


# --- every built-in resource, with its streaming subresources -------------------------------------------

@pytest.fixture(scope="module")
def served() -> tuple[core_pb2.DiscoverResponse, documents.Documents]:
    """The documents of every built-in kind, as `capstan serve` registers them."""
    service_resource, _ = services()
    discovered = discover(Registry((*BUILTIN, service_resource)))
    return discovered, documents.build(discovered, version="v1.28.15")


def test_every_resource_is_in_its_document(served: tuple[core_pb2.DiscoverResponse, documents.Documents]) -> None:
    """kubectl explain finds a kind by its GVK in /openapi/v3: none may be left out for a subresource whose
    kind is no message (pods' exec, services' proxy) or a create-only resource without a list kind."""
    discovered, built = served
    missing = []
    for r in discovered.resources:
        if not r.proto_message:
            continue
        doc = orjson.loads(built.group_versions[documents.key(r.group, r.version)].body)
        gvks = [s.get("x-kubernetes-group-version-kind") or [] for s in doc["components"]["schemas"].values()]
        if {"group": r.group, "kind": r.kind, "version": r.version} not in (g for found in gvks for g in found):
            missing.append(f"{r.group}/{r.version} {r.resource}")
    assert not missing


CONNECT = [
    # (path, methods, operation id of the first, kind, the path's parameters), as kube-apiserver 1.28 documents them
    (f"{NS}/pods/{{name}}/exec", ["get", "post"], "connectCoreV1GetNamespacedPodExec", "PodExecOptions",
     ["command", "container", "name", "namespace", "stderr", "stdin", "stdout", "tty"]),
    (f"{NS}/pods/{{name}}/attach", ["get", "post"], "connectCoreV1GetNamespacedPodAttach", "PodAttachOptions",
     ["container", "name", "namespace", "stderr", "stdin", "stdout", "tty"]),
    (f"{NS}/pods/{{name}}/portforward", ["get", "post"], "connectCoreV1GetNamespacedPodPortforward",
     "PodPortForwardOptions", ["name", "namespace", "ports"]),
    (f"{NS}/pods/{{name}}/proxy/{{path}}", ["get", "put", "post", "delete", "options", "head", "patch"],
     "connectCoreV1GetNamespacedPodProxyWithPath", "PodProxyOptions", ["name", "namespace", "path", "path"]),
    (f"{NS}/services/{{name}}/proxy", ["get", "put", "post", "delete", "options", "head", "patch"],
     "connectCoreV1GetNamespacedServiceProxy", "ServiceProxyOptions", ["name", "namespace", "path"]),
    ("/api/v1/nodes/{name}/proxy", ["get", "put", "post", "delete", "options", "head", "patch"],
     "connectCoreV1GetNodeProxy", "NodeProxyOptions", ["name", "path"]),
    (f"{NS}/pods/{{name}}/log", ["get"], "readCoreV1NamespacedPodLog", "Pod",
     ["container", "follow", "insecureSkipTLSVerifyBackend", "limitBytes", "name", "namespace", "pretty", "previous",
      "sinceSeconds", "tailLines", "timestamps"]),
]


@pytest.mark.parametrize(("path", "methods", "operation_id", "kind", "names"), CONNECT)
def test_streaming_subresources(served: tuple[core_pb2.DiscoverResponse, documents.Documents], path: str,
                                methods: list[str], operation_id: str, kind: str, names: list[str]) -> None:
    doc = orjson.loads(served[1].group_versions["api/v1"].body)
    item = doc["paths"][path]
    assert sorted(m for m in item if m != "parameters") == sorted(methods)
    first = item[methods[0]]
    assert (first["operationId"], first["x-kubernetes-group-version-kind"]) == (
        operation_id, {"group": "", "kind": kind, "version": "v1"})
    assert first["x-kubernetes-action"] == ("get" if kind == "Pod" else "connect")
    assert [p["name"] for p in item["parameters"]] == names
    media = set(first["responses"]["200"]["content"])
    assert media == ({"application/json", "application/vnd.kubernetes.protobuf", "application/yaml", "text/plain"}
                     if kind == "Pod" else {"*/*"})
    assert all(c == {"schema": {"type": "string"}} for c in first["responses"]["200"]["content"].values())
