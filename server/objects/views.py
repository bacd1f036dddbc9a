"""Server-side conversions of responses (Tables, PartialObjectMetadata), shared by get, list and watch.

The converted documents are JSON whatever the request's encoding (kube-apiserver serves Tables only as
JSON or YAML, and the gateway negotiates that), except a PartialObjectMetadataList asked in protobuf, as
client-go's metadata informers ask: its items are the stored protobuf renderings' ObjectMeta, not transcoded.
"""

from __future__ import annotations

from collections.abc import Mapping

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors, stored
from server.machinery.codec import transcode
from server.machinery.values import Obj
from server.objects import render
from server.registry import printing
from server.registry.printing.table import API_VERSIONS
from server.registry.resources import Resource
from storage import KeyValue

JSON = core_pb2.ENCODING_JSON


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
