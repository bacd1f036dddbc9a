"""The OpenAPI v3 documents of everything the core serves, built from one Discover answer.

One document per group version ("api/v1", "apis/apps/v1"): its resources' operations (paths.py) and the
schemas they reach (schemas.py), looked up by each resource's proto_message in the default descriptor
pool; and the documents of the discovery paths and /version (roots.py: "api", "apis", "apis/<group>",
"version"). Every document declares kube's BearerToken security scheme. The index (/openapi/v3) points at
each document with a hash of its bytes, as kube-openapi's handler3 does:
{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=<SHA-512, upper hex>"}}}.
A resource without a protobuf message (JSON-only kinds) has no schema to publish and is left out. A group
version an extension API server serves (an APIService with a service) has the document that server published,
as the core last fetched it.

Documents are rebuilt only when the Discover answer changes (Cache), so a hash names one document for
as long as the set of resources stays the same.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import formatdate
from typing import Any

import orjson
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import Descriptor

# Imported for their side effect: they register the Kubernetes messages in the default descriptor pool (the
# gateway may run without the core in its process).
from capstan.api.apps.v1 import apps_pb2 as _apps_v1  # noqa: F401
from capstan.api.autoscaling.v1 import autoscaling_pb2 as _autoscaling_v1  # noqa: F401
from capstan.api.batch.v1 import batch_pb2 as _batch_v1  # noqa: F401
from capstan.api.coordination.v1 import coordination_pb2 as _coordination_v1  # noqa: F401
from capstan.api.core.v1 import core_pb2 as _core_v1  # noqa: F401
from capstan.api.events.v1 import events_pb2 as _events_v1  # noqa: F401
from capstan.api.meta.v1 import meta_pb2 as _meta_v1  # noqa: F401
from capstan.api.rbac.v1 import rbac_pb2 as _rbac_v1  # noqa: F401
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.openapi import comments, custom, gnostic, objectmeta, paths, roots, swagger
from gateway.openapi.schemas import GVK, META, SchemaSet

log = logging.getLogger(__name__)

Doc = dict[str, Any]

PATCH = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
PATCH_SCHEMA: Doc = {
    "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
    "type": "object",
}
SECURITY_SCHEMES: Doc = {"BearerToken": {
    "description": "Bearer Token authentication", "in": "header", "name": "authorization", "type": "apiKey"}}


@dataclass(frozen=True, slots=True)
class Document:
    body: bytes  # the JSON document, keys sorted as Go's encoding/json writes them
    etag: str  # kube-openapi's: the SHA-512 of body in upper-case hex

    @classmethod
    def of(cls, doc: Doc) -> Document:
        body = orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
        return cls(body, hashlib.sha512(body).hexdigest().upper())


@dataclass(frozen=True, slots=True)
class Documents:
    index: Document
    group_versions: Mapping[str, Document]  # "api/v1", "apis/<group>/<version>" (and the roots) -> its document
    swagger: Document  # /openapi/v2 as JSON; its etag also names the protobuf form
    swagger_protobuf: bytes  # /openapi/v2 in gnostic's protobuf encoding
    last_modified: str  # HTTP date of the build


def key(group: str, version: str) -> str:
    """The index's name of a group version: "api/v1", "apis/apps/v1"."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def server_relative_url(name: str, etag: str) -> str:
    return f"/openapi/v3/{name}?hash={etag}"


def build(discovered: core_pb2.DiscoverResponse, *, version: str) -> Documents:
    """Every group version's document and the index; `version` is the server's gitVersion (info.version)."""
    by_gv: dict[tuple[str, str], list[core_pb2.Resource]] = {}
    for r in discovered.resources:
        by_gv.setdefault((r.group, r.version), []).append(r)
    gvks = _gvks(discovered.resources, by_gv)
    v3 = {key(g, v): _group_version(g, v, resources, gvks, version) for (g, v), resources in by_gv.items()}
    merged = list(v3.values())
    for backend in discovered.aggregated:
        doc = _backend_document(backend)
        if doc is not None:
            v3[key(backend.group, backend.version)] = doc
            merged.append(doc)
    groups = {g for g, _ in by_gv if g} | {b.group for b in discovered.aggregated if b.group}
    for name, (schemas, operations) in roots.documents(groups, find).items():
        root = v3.setdefault(name, _document(schemas, operations, version))
        merged.append(root)
    docs = {name: Document.of(doc) for name, doc in sorted(v3.items())}
    index = {"paths": {name: {"serverRelativeURL": server_relative_url(name, doc.etag)} for name, doc in docs.items()}}
    v2 = custom.bare_in_v2(swagger.swagger(merged, version=version))
    return Documents(Document.of(index), docs, Document.of(v2), gnostic.document(v2), formatdate(usegmt=True))


def _backend_document(backend: core_pb2.AggregatedVersion) -> Doc | None:
    """An extension API server's v3 document of its group version, served as it sent it, and merged into
    /openapi/v2 as kube-aggregator merges a backend's spec; None when it sent none, or one that is no OpenAPI v3
    document Capstan can convert (then its group version is left out of both, and logged)."""
    if not backend.openapi_v3:
        return None
    try:
        doc = orjson.loads(backend.openapi_v3)
        swagger.swagger([doc], version="")
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as err:
        log.warning("OpenAPI v3 document of %s/%s left out: %r", backend.group, backend.version, err)
        return None
    return doc if isinstance(doc, dict) else None


class Cache:
    """The documents of the latest Discover answer; rebuilt when, and only when, the answer changes."""

    def __init__(self, *, version: str) -> None:
        self._version = version
        self._answer = b""
        self._documents: Documents | None = None

    def get(self, discovered: core_pb2.DiscoverResponse) -> Documents:
        answer = discovered.SerializeToString(deterministic=True)
        if self._documents is None or answer != self._answer:
            self._documents, self._answer = build(discovered, version=self._version), answer
        return self._documents


def find(name: str) -> Descriptor | None:
    try:
        found: Descriptor = descriptor_pool.Default().FindMessageTypeByName(name)
    except KeyError:
        return None
    return found


def _list_kind(r: core_pb2.Resource) -> str:
    return r.list_kind or r.kind + "List"


def _sibling(message: Descriptor, kind: str) -> str:
    """The full name of another kind in message's package (its list kind, a subresource's kind)."""
    package = message.file.package
    return f"{package}.{kind}" if package else kind


def _gvks(resources: Any, by_gv: Mapping[tuple[str, str], Any]) -> dict[str, list[GVK]]:
    """message full name -> the (group, version, kind)s it is served as. meta/v1's DeleteOptions and
    WatchEvent are registered in every group version, Status and APIResourceList in core/v1 only."""
    out: dict[str, list[GVK]] = defaultdict(list)
    for r in resources:
        message = find(r.proto_message) if r.proto_message else None
        if message is None:
            continue
        out[message.full_name].append((r.group, r.version, r.kind))
        out[_sibling(message, _list_kind(r))].append((r.group, r.version, _list_kind(r)))
        for sub in r.subresources:
            if sub.proto_message:
                out[sub.proto_message].append((sub.group, sub.version, sub.kind))
    for group, version in {("", "v1"), *by_gv}:
        for kind in ("DeleteOptions", "WatchEvent"):
            out[META + kind].append((group, version, kind))
    out[META + "Status"].append(("", "v1", "Status"))
    out[META + "APIResourceList"].append(("", "v1", "APIResourceList"))
    return {name: sorted(set(found)) for name, found in out.items()}


def _meta(schemas: SchemaSet, kind: str) -> str:
    message = find(META + kind)
    if message is None:
        raise LookupError(f"{META}{kind} is not in the descriptor pool")
    return schemas.ref(message)


def _group_version(group: str, version: str, resources: list[core_pb2.Resource], gvks: Mapping[str, list[GVK]],
                   server_version: str) -> Doc:
    schemas = SchemaSet(comments.load(), gvks)
    meta = paths.MetaRefs(
        status=_meta(schemas, "Status"), delete_options=_meta(schemas, "DeleteOptions"),
        watch_event=_meta(schemas, "WatchEvent"), patch=schemas.add(PATCH, PATCH_SCHEMA),
        resource_list=_meta(schemas, "APIResourceList"),
    )
    served: list[tuple[core_pb2.Resource, paths.Refs]] = []
    for r in resources:
        refs = _refs(schemas, r)
        if refs is not None:
            served.append((r, refs))
    operations = paths.build(group, version, served, meta)
    objectmeta.describe(schemas.schemas)
    if resources and not any(r.proto_message for r in resources):
        operations = custom.json_only(operations)  # custom resources: JSON and YAML only
    return _document(schemas, operations, server_version)


def _document(schemas: SchemaSet, operations: Doc, server_version: str) -> Doc:
    return {
        "components": {"schemas": schemas.schemas, "securitySchemes": SECURITY_SCHEMES},
        "info": {"title": "Kubernetes", "version": server_version},
        "openapi": "3.0.0",
        "paths": operations,
    }


# Verbs whose answers are the list kind: a resource with none of them (a review, a binding) has no list kind.
_LIST_VERBS = frozenset({"list", "watch", "deletecollection"})


def _refs(schemas: SchemaSet, r: core_pb2.Resource) -> paths.Refs | None:
    """The refs of r's kind, list kind and subresource kinds (all in the kind's package), or None when r has no
    message, or lists and has no list message (logged: a proto_message the pool lacks is a bug). A subresource
    whose kind is no message (exec's, attach's, portforward's and proxy's options, which are query parameters, not
    bodies) has no ref; paths.build words it as kube words a connect operation."""
    if r.json_schema:
        return custom.refs(schemas, r)  # a custom resource (protobuf message or not): its CRD's schema
    message = find(r.proto_message) if r.proto_message else None
    if message is None:
        if r.proto_message:
            log.warning("OpenAPI: %s names %s, which is not in the descriptor pool", r.resource, r.proto_message)
        return None
    list_ref = ""
    if _LIST_VERBS & set(r.verbs):
        list_message = find(_sibling(message, _list_kind(r)))
        if list_message is None:
            log.warning("OpenAPI: %s is left out: %s is not in the descriptor pool", r.resource,
                        _sibling(message, _list_kind(r)))
            return None
        list_ref = schemas.ref(list_message)
    # A subresource's kind is a sibling of the resource's, unless it names its own message (/scale's Scale).
    subresources: dict[str, str] = {}
    for sub in r.subresources:
        other = find(sub.proto_message or _sibling(message, sub.kind))
        if other is not None:
            subresources[sub.name] = schemas.ref(other)
    return paths.Refs(schemas.ref(message), list_ref, subresources)
