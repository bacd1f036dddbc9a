"""Kind schemas: how the core checks, types and encodes a kind's objects.

ProtoSchema serves kinds with a Kubernetes protobuf message (descriptor-driven,
no per-kind code); JsonSchema serves kinds that are JSON only (custom resources).
Both implement server.registry.Schema.
"""

from __future__ import annotations

import functools
from typing import cast

import orjson
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError, Message

from capstan.api.meta.v1 import meta_pb2
from server.machinery.bounded import Bounded
from server.machinery.codec import metabytes, transcode
from server.machinery.codec.errors import DecodeError as TranscodeError
from server.machinery.codec.wire import varint
from server.machinery.crdschema import prune, values
from server.machinery.crdschema.structural import Structural
from server.machinery.fields import jsonshapes
from server.machinery.fields.shapes import Shape
from server.machinery.patch.values import copy_json
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj

OBJECT_META = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
TYPE_META = ("kind", "apiVersion")
RESTS_MAX_BYTES = 16 << 20  # a remembered body's JSON and protobuf, summed over the remembered ones


class SchemaError(Exception):
    """An object that does not fit its kind's schema; the text is kube-apiserver's decoding error, `path` where in the
    object (Kubernetes field-path form, "" when unknown)."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


def proto_to_json(cls: type[Message], data: bytes) -> Obj:
    """The JSON form of a message's bytes (SchemaError when they do not parse)."""
    message = cls()
    try:
        message.ParseFromString(data)
    except DecodeError as err:
        raise SchemaError(f"proto: {err}") from None
    return transcode.encode(message)


class ProtoSchema:
    """A built-in kind's schema: its protobuf message.

    A write types its body (normalize) and renders the result (to_proto) with only metadata changed in
    between, most of the time: normalize remembers the protobuf of the fields after metadata under their
    JSON (when the body was already in its normal form, so the message it decoded is the one its JSON
    stands for), and to_proto encodes just the metadata when the rest is one it remembers (ObjectMeta is
    field 1, so the message is its metadata followed by the rest).
    """

    def __init__(self, message_class: type[Message]) -> None:
        self._cls = message_class
        metadata = message_class.DESCRIPTOR.fields_by_number.get(1)
        self._meta_first = (metadata is not None and metadata.name == "metadata"
                            and metadata.message_type is not None and metadata.message_type.full_name == OBJECT_META)
        # The protobuf of recently normalized bodies' fields after metadata, by their JSON: equal JSON decodes
        # to equal messages, so a hit is exact. It only bridges a write's normalize and its to_proto, with a
        # few hundred writes in flight at most; bounded in bytes too (key and value are each up to an object's
        # size, 1.5 MiB).
        self._rests: Bounded[bytes, bytes] = Bounded(256, max_bytes=RESTS_MAX_BYTES, weight=_rest_weight)

    @property
    def proto_message(self) -> str:
        return str(self._cls.DESCRIPTOR.full_name)

    @property
    def descriptor(self) -> Descriptor:
        return cast(Descriptor, self._cls.DESCRIPTOR)

    def normalize(self, obj: Obj) -> tuple[Obj, list[str]]:
        message, unknown = self._decode(obj)
        normalized = transcode.encode(message)
        if self._meta_first:
            rest = _rest(normalized)
            # The message is what normalized decodes to only when the body held the same values:
            # a body may set zeros that print as nothing, or leave out structs that print as {}.
            if rest == _rest(obj, TYPE_META):
                message.ClearField("metadata")
                self._rests.put(orjson.dumps(rest), message.SerializeToString(deterministic=True))
        return normalized, unknown

    def from_proto(self, data: bytes) -> Obj:
        return proto_to_json(self._cls, data)

    def to_proto(self, obj: Obj) -> bytes:
        if self._meta_first:
            rest = self._rests.get(orjson.dumps(_rest(obj)))
            metadata = obj.get("metadata")
            if rest is not None and type(metadata) is dict:
                try:
                    head = metabytes.encode(metadata)
                except TranscodeError:
                    pass  # the whole object's decoding words the error
                else:
                    return b"\x0a" + varint(len(head)) + head + rest
        message, _ = self._decode(obj)
        return message.SerializeToString(deterministic=True)

    def _decode(self, obj: Obj) -> tuple[Message, list[str]]:
        try:
            result = transcode.decode(self._cls, obj)
        except TranscodeError as err:
            raise SchemaError(str(err), path=err.path) from None
        return result.message, list(result.unknown)


def _rest_weight(key: bytes, value: bytes) -> int:
    return len(key) + len(value)


def _rest(obj: Obj, skip: tuple[str, ...] = ()) -> Obj:
    """An object's fields after metadata (and any in skip)."""
    return {key: value for key, value in obj.items() if key != "metadata" and key not in skip}


class JsonSchema:
    """A custom resource's schema: the CRD version's openAPIV3Schema (server/crd/).

    normalize types metadata as ObjectMeta and, with a structural schema, prunes fields the schema does not
    declare (reported as unknown fields, so fieldValidation treats them as for built-in kinds) and applies
    `default:`s; `validate` is the OpenAPI value validation kube-apiserver runs on create and update.
    Without a schema (or with spec.preserveUnknownFields) the body is kept as it is.
    """

    def __init__(self, structural: Structural | None = None, *, preserve_unknown_fields: bool = False,
                 openapi: bytes = b"") -> None:
        self.structural = structural
        self.openapi = openapi  # the openAPIV3Schema as JSON, for OpenAPI documents (server/registry/discovery.py)
        self._prunes = structural is not None and not preserve_unknown_fields

    @property
    def proto_message(self) -> str:
        return ""

    @property
    def descriptor(self) -> Descriptor | None:
        return None

    @functools.cached_property
    def shape(self) -> Shape:
        """Its server-side apply shape (server/machinery/fields/jsonshapes.py)."""
        return jsonshapes.resource_shape(self.structural)

    @property
    def has_defaults(self) -> bool:
        return self._prunes and self.structural is not None and self.structural.has_defaults

    def normalize(self, obj: Obj) -> tuple[Obj, list[str]]:
        unknown: list[str] = []
        metadata = obj.get("metadata")
        if self._prunes and self.structural is not None:
            out: Obj = prune.coerce(obj, self.structural, "", unknown, resource_root=True)
        else:
            out = copy_json(obj)
        if metadata is not None:
            out["metadata"] = _object_meta(metadata, unknown)
        return out, unknown

    def default(self, obj: Obj) -> Obj:
        """The stored object pruned and defaulted as reads see it (kube defaults objects read from storage)."""
        if not self._prunes or self.structural is None:
            return obj
        return prune.default_only(obj, self.structural)  # type: ignore[no-any-return]

    def validate(self, obj: Obj) -> list[FieldError]:
        if self.structural is None:
            return []
        return values.validate(obj, self.structural)

    def from_proto(self, data: bytes) -> Obj:
        raise SchemaError("this kind has no protobuf schema")

    def to_proto(self, obj: Obj) -> bytes:
        return b""


def _object_meta(metadata: object, unknown: list[str]) -> Obj:
    """metadata typed as ObjectMeta, as kube-apiserver decodes a custom resource's metadata."""
    try:
        result = transcode.decode(meta_pb2.ObjectMeta, metadata, path="metadata", type_meta=False)
    except TranscodeError as err:
        raise SchemaError(str(err), path=err.path) from None
    unknown.extend(result.unknown)
    return transcode.encode(result.message)
