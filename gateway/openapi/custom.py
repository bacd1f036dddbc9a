"""OpenAPI schemas of custom resources, from their CRD version's openAPIV3Schema, as apiextensions-apiserver
publishes them (its openapi builder).

The core's Discover answer carries a JSON-only resource's schema (Resource.json_schema). Its kind becomes a
component named after the group reversed at the domain, then version and kind: group stable.example.com,
version v1, kind CronTab -> com.example.stable.v1.CronTab (and ...CronTabList). The kind's schema is the
CRD's, with apiVersion, kind and metadata (a $ref to ObjectMeta) as every object has them and
x-kubernetes-group-version-kind for kubectl explain. Custom resources are JSON only: their operations
offer and take no protobuf, and PATCH takes no strategic merge patch.
"""

from __future__ import annotations

from typing import Any

import orjson
from google.protobuf import descriptor_pool

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.openapi import paths
from gateway.openapi.schemas import API_VERSION, KIND, LIST_META, META, OBJECT_META, SchemaSet

Doc = dict[str, Any]

PROTOBUF = "application/vnd.kubernetes.protobuf"
STRATEGIC = "application/strategic-merge-patch+json"
SCALE = "k8s.io.api.autoscaling.v1.Scale"


def component_name(group: str, version: str, kind: str) -> str:
    """stable.example.com, v1, CronTab -> com.example.stable.v1.CronTab."""
    return ".".join([*reversed(group.split(".")), version, kind])


def refs(schemas: SchemaSet, r: core_pb2.Resource) -> paths.Refs | None:
    """The component refs of a custom resource's kind, list kind and subresources; None without a schema."""
    if not r.json_schema:
        return None
    schema: Doc = orjson.loads(r.json_schema)
    meta = _message_ref(schemas, META + "ObjectMeta")
    list_meta = _message_ref(schemas, META + "ListMeta")
    kind_name = component_name(r.group, r.version, r.kind)
    kind_ref = schemas.add(kind_name, _kind(schema, r, meta))
    list_kind = r.list_kind or r.kind + "List"
    list_ref = schemas.add(component_name(r.group, r.version, list_kind), _list(r, list_kind, kind_ref, list_meta))
    subresources = {}
    for sub in r.subresources:
        subresources[sub.name] = _message_ref(schemas, sub.proto_message) if sub.proto_message else kind_ref
    return paths.Refs(kind_ref, list_ref, subresources)


def json_only(operations: Doc) -> Doc:
    """A group version's paths with the protobuf media types and strategic merge patch taken out."""
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in (STRATEGIC,) and not k.startswith(PROTOBUF)}
        if isinstance(node, list):
            return [strip(item) for item in node]
        return node

    return strip(operations)  # type: ignore[no-any-return]


def _message_ref(schemas: SchemaSet, full_name: str) -> str:
    message = descriptor_pool.Default().FindMessageTypeByName(full_name)
    return schemas.ref(message)


def _kind(schema: Doc, r: core_pb2.Resource, meta_ref: str) -> Doc:
    out: Doc = {k: v for k, v in schema.items() if k != "properties"}
    properties: Doc = {
        "apiVersion": {"description": API_VERSION, "type": "string"},
        "kind": {"description": KIND, "type": "string"},
        "metadata": {"allOf": [{"$ref": meta_ref}], "description": OBJECT_META},
    }
    for name, prop in (schema.get("properties") or {}).items():
        if name not in properties:
            properties[name] = prop
    out["properties"] = properties
    out.setdefault("type", "object")
    out["x-kubernetes-group-version-kind"] = [{"group": r.group, "kind": r.kind, "version": r.version}]
    return out


def _list(r: core_pb2.Resource, list_kind: str, kind_ref: str, list_meta_ref: str) -> Doc:
    return {
        "description": f"{list_kind} is a list of {r.kind}",
        "properties": {
            "apiVersion": {"description": API_VERSION, "type": "string"},
            "items": {
                "description": f"List of {r.resource}. More info: "
                               "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                "items": {"$ref": kind_ref},
                "type": "array",
            },
            "kind": {"description": KIND, "type": "string"},
            "metadata": {"allOf": [{"$ref": list_meta_ref}], "description": LIST_META},
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": r.group, "kind": list_kind, "version": r.version}],
    }



def bare_in_v2(swagger: Doc) -> Doc:
    """/openapi/v2 as apiextensions-apiserver's builder writes it for a kind whose schema preserves unknown fields
    at its root (a CRD without a real schema): a bare object naming its group version kind and nothing else, since
    kubectl would take listed properties as the only ones allowed. /openapi/v3 keeps the schema."""
    definitions: Doc = swagger["definitions"]
    for name, schema in definitions.items():
        if schema.get("x-kubernetes-preserve-unknown-fields") is True and "x-kubernetes-group-version-kind" in schema:
            definitions[name] = {"type": "object",
                                 "x-kubernetes-group-version-kind": schema["x-kubernetes-group-version-kind"]}
    return swagger
