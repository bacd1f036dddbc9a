"""Server-side conversions of responses (Tables, PartialObjectMetadata), shared by get, list, watch and the writes.

A write's answer is converted as kube's transformResponseObject converts it, after the write: the object
(create, update, patch, a delete that answers it) to a one-row Table or PartialObjectMetadata, the objects a
deletecollection removed to a Table or PartialObjectMetadataList; a Success Status never.

The converted documents are JSON whatever the request's encoding (kube-apiserver serves Tables only as
JSON or YAML, and the gateway negotiates that), except a PartialObjectMetadataList asked in protobuf, as
client-go's metadata informers ask: its items are the stored protobuf renderings' ObjectMeta, not transcoded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TypeVar

import orjson

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors, meta, stored
from server.machinery.codec import transcode
from server.machinery.values import Obj
from server.objects import render
from server.registry import printing
from server.registry.printing.table import API_VERSIONS
from server.registry.resources import Resource
from server.registry.strategy import DEFAULT
from storage import KeyValue

JSON = core_pb2.ENCODING_JSON
Write = TypeVar("Write", core_pb2.CreateRequest, core_pb2.UpdateRequest, core_pb2.PatchRequest,
                core_pb2.DeleteRequest, core_pb2.DeleteCollectionRequest)


def _version(view: core_pb2.ViewOptions) -> str:
    return view.api_version or printing.META_V1


def check(view: core_pb2.ViewOptions) -> str:
    """The includeObject policy; 400 for an unknown one, 406 for a meta.k8s.io version without Tables (the
    gateway's negotiation never asks for one; a gRPC client may). Checked before any object is read."""
    if view.api_version and view.api_version not in API_VERSIONS:
        raise errors.ApiError(errors.status(406, "NotAcceptable", f"no Table or PartialObjectMetadata in "
                                            f"{view.api_version!r}: only {', '.join(API_VERSIONS)}"))
    return printing.table_options(view.include_object)


def raw(doc: Obj) -> core_pb2.RawObject:
    return core_pb2.RawObject(encoding=JSON, data=render.go_json(doc))


def one(resource: Resource, view: core_pb2.ViewOptions, kv: KeyValue) -> core_pb2.RawObject:
    """GET with a view: a one-row Table or a PartialObjectMetadata."""
    include = check(view)
    obj, rv = render.load(kv.value), str(kv.mod_revision)
    if view.view == core_pb2.VIEW_TABLE:
        return raw(printing.object_table(resource, obj, rv, include_object=include, api_version=_version(view)))
    if view.view == core_pb2.VIEW_PARTIAL_OBJECT_METADATA:
        return raw(printing.partial_object_metadata(obj, rv, api_version=_version(view)))
    raise printing.partial_shape_error(resource, list_requested=True)


def many(
    resource: Resource, view: core_pb2.ViewOptions, kvs: list[KeyValue], list_meta: Mapping[str, object]
) -> core_pb2.RawObject:
    """LIST with a view: a Table or a PartialObjectMetadataList."""
    include = check(view)
    rows = [(render.load(kv.value), str(kv.mod_revision)) for kv in kvs]
    if view.view == core_pb2.VIEW_TABLE:
        return raw(printing.table(
            resource, rows, list_meta=list_meta, include_object=include, api_version=_version(view)))
    if view.view == core_pb2.VIEW_PARTIAL_OBJECT_METADATA_LIST:
        return raw(printing.partial_object_metadata_list(rows, list_meta=list_meta, api_version=_version(view)))
    raise printing.partial_shape_error(resource, list_requested=False)


def partial_message(kv: KeyValue) -> bytes:
    """A meta.k8s.io PartialObjectMetadata's protobuf message for a stored value: its ObjectMeta as the kind's
    protobuf rendering holds it, or transcoded from its JSON for a kind without one (a custom resource)."""
    framed = stored.framed_metadata(kv.value, str(kv.mod_revision))
    if framed is not None:
        return framed
    doc = printing.partial_object_metadata(render.load(kv.value), str(kv.mod_revision))
    return transcode.decode(meta_pb2.PartialObjectMetadata, doc).message.SerializeToString(deterministic=True)


def plain(request: Write) -> Write | None:
    """The write to make for a request with a view: the same, its answer asked as JSON (what the conversion
    reads) and without the view; None for a request without one. A view no conversion offers is refused first."""
    if request.view.view == core_pb2.VIEW_UNSPECIFIED:
        return None
    check(request.view)
    made = type(request)()
    made.CopyFrom(request)
    made.accept = JSON
    made.ClearField("view")
    return made


def answer(resource: Resource, view: core_pb2.ViewOptions, answered: core_pb2.RawObject) -> core_pb2.RawObject:
    """A write's answer, the object as JSON, converted as `view` asks."""
    include = check(view)
    obj = orjson.loads(answered.data)
    rv = str(meta.meta(obj).get("resourceVersion") or "")
    if view.view == core_pb2.VIEW_TABLE:
        return raw(printing.object_table(_of_kind(resource, obj), obj, rv, include_object=include,
                                         api_version=_version(view)))
    if view.view == core_pb2.VIEW_PARTIAL_OBJECT_METADATA:
        return raw(printing.partial_object_metadata(obj, rv, api_version=_version(view)))
    raise printing.partial_shape_error(_of_kind(resource, obj), list_requested=True)


def answer_list(resource: Resource, view: core_pb2.ViewOptions, listed: core_pb2.ListResponse) -> core_pb2.RawObject:
    """The objects a deletecollection answered (JSON items), converted as `view` asks."""
    include = check(view)
    rows = []
    for item in listed.items:
        obj = orjson.loads(item)
        rows.append((obj, str(meta.meta(obj).get("resourceVersion") or "")))
    list_meta = {"resourceVersion": listed.metadata.resourceVersion}
    if view.view == core_pb2.VIEW_TABLE:
        return raw(printing.table(resource, rows, list_meta=list_meta, include_object=include,
                                  api_version=_version(view)))
    if view.view == core_pb2.VIEW_PARTIAL_OBJECT_METADATA_LIST:
        return raw(printing.partial_object_metadata_list(rows, list_meta=list_meta, api_version=_version(view)))
    raise printing.partial_shape_error(resource, list_requested=False)


def _of_kind(resource: Resource, obj: Obj) -> Resource:
    """The resource whose Table an answered object takes: its own, or for a subresource answering another kind
    the printer kube has for that kind (/scale's Scale), else the default columns (a TokenRequest's)."""
    kind = obj.get("kind")
    if kind == resource.kind or not isinstance(kind, str) or not kind:
        return resource
    group, _, version = str(obj.get("apiVersion") or "").rpartition("/")
    return dataclasses.replace(resource, group=group, version=version, kind=kind,
                               resource=kind.lower(), strategy=DEFAULT)


class EventViews:
    """A watch's per-event conversion (Tables carry column definitions on the first event only)."""

    def __init__(self, resource: Resource, view: core_pb2.ViewOptions) -> None:
        self._resource = resource
        self._view = view
        include = check(view)
        self._tables = (
            printing.TableStream(resource, include_object=include, api_version=_version(view))
            if view.view == core_pb2.VIEW_TABLE else None
        )

    def convert(self, obj: Obj, resource_version: str) -> Obj | None:
        """The converted object, or None to send it unconverted (as kube does for a list form of an event)."""
        if self._tables is not None:
            return self._tables.event(obj, resource_version)
        if self._view.view == core_pb2.VIEW_PARTIAL_OBJECT_METADATA:
            return printing.partial_object_metadata(obj, resource_version, api_version=_version(self._view))
        return None
