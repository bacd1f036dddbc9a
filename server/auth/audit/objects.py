"""The objects an audit event carries at the Request and RequestResponse levels, as JSON values.

The core's messages hold object bytes in JSON or in the kind's protobuf; protobuf is decoded with the resource's
schema from the registry (a subresource's protobuf body, whose kind is another message, is left out rather
than guessed). Contract: rendering never raises — an object that cannot be read is left out of the event, the
request goes on. Secrets of the security chain never reach the log: a TokenRequest's issued token and a
TokenReview's token are removed (kube records them; Capstan's audit log is not meant to hold credentials).
"""

from __future__ import annotations

from typing import Any

import orjson
from google.protobuf.message import Message

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.audit.event import Json, status_object
from server.machinery.codec import yamlread
from server.registry.resources import Registry


def _decoded(registry: Registry, path: core_pb2.ResourcePath, raw: core_pb2.RawObject) -> Json | None:
    try:
        if raw.encoding == core_pb2.ENCODING_PROTOBUF:
            resource = registry.get(path.group, path.version, path.resource)
            if resource is None or path.subresource or not resource.schema.proto_message:
                return None
            obj = resource.schema.from_proto(raw.data)
            return {"kind": resource.kind, "apiVersion": resource.api_version, **obj}
        value = orjson.loads(raw.data)
    except Exception:
        return None
    return value if isinstance(value, dict) else None


def _patch(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    try:
        return yamlread.load(body)
    except ValueError:
        return None


def request_object(registry: Registry, request: Message | None) -> Any:
    """The object (or patch) a request sends, None when it sends none."""
    if isinstance(request, (core_pb2.CreateRequest, core_pb2.UpdateRequest)):
        return _redacted(_decoded(registry, request.path, request.object))
    if isinstance(request, core_pb2.PatchRequest):
        return _patch(request.patch)
    return None


def response_object(registry: Registry, request: Message | None, response: Message) -> Any:
    path = getattr(request, "path", core_pb2.ResourcePath())
    if isinstance(response, (core_pb2.CreateResponse, core_pb2.GetResponse, core_pb2.UpdateResponse,
                             core_pb2.PatchResponse)):
        return _redacted(_decoded(registry, path, response.object))
    if isinstance(response, core_pb2.DeleteResponse):
        if response.HasField("status"):
            return status_object(response.status)
        return _decoded(registry, path, response.object)
    if isinstance(response, core_pb2.ListResponse):
        return _list(registry, path, response)
    if isinstance(response, core_pb2.DeleteCollectionResponse):
        return _list(registry, path, response.deleted)
    return None


def _list(registry: Registry, path: core_pb2.ResourcePath, response: core_pb2.ListResponse) -> Json | None:
    if response.HasField("converted"):
        return _decoded(registry, path, response.converted)
    metadata: Json = {}
    if response.metadata.resourceVersion:
        metadata["resourceVersion"] = response.metadata.resourceVersion
    token = getattr(response.metadata, "continue")  # a Python keyword as a field name
    if token:
        metadata["continue"] = token
    if response.metadata.HasField("remainingItemCount"):
        metadata["remainingItemCount"] = response.metadata.remainingItemCount
    items = []
    for data in response.items:
        item = _decoded(registry, path, core_pb2.RawObject(encoding=response.encoding, data=data))
        if item is None:
            return None
        item.pop("kind", None)
        item.pop("apiVersion", None)
        items.append(item)
    return {"kind": response.kind, "apiVersion": response.api_version, "metadata": metadata, "items": items}


def _redacted(obj: Json | None) -> Json | None:
    if obj is None:
        return None
    kind = obj.get("kind")
    if kind == "TokenRequest" and isinstance(obj.get("status"), dict):
        obj["status"].pop("token", None)
    elif kind == "TokenReview" and isinstance(obj.get("spec"), dict):
        obj["spec"].pop("token", None)
    return obj


def without_managed_fields(obj: Any) -> Any:
    """omitManagedFields: metadata.managedFields dropped from the object, or from each item of a list."""
    if not isinstance(obj, dict):
        return obj
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    items = obj.get("items")
    if isinstance(items, list):
        for item in items:
            without_managed_fields(item)
    return obj
