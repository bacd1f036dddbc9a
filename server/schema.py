"""Kind schemas: how the core checks, types and encodes a kind's objects.

ProtoSchema serves kinds with a Kubernetes protobuf message (descriptor-driven,
no per-kind code); JsonSchema serves kinds that are JSON only (custom resources).
Both implement server.registry.Schema.
"""

from __future__ import annotations

from typing import cast

from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError, Message

from server.codec import transcode
from server.codec.errors import DecodeError as TranscodeError
from server.registry import Obj


class SchemaError(Exception):
    """An object that does not fit its kind's schema; the text is kube-apiserver's decoding error."""


class ProtoSchema:
    def __init__(self, message_class: type[Message]) -> None:
        self._cls = message_class

    @property
    def proto_message(self) -> str:
        return str(self._cls.DESCRIPTOR.full_name)

    @property
    def descriptor(self) -> Descriptor:
        return cast(Descriptor, self._cls.DESCRIPTOR)

    def normalize(self, obj: Obj) -> tuple[Obj, list[str]]:
        message, unknown = self._decode(obj)
        return transcode.encode(message), unknown

    def from_proto(self, data: bytes) -> Obj:
        message = self._cls()
        try:
            message.ParseFromString(data)
        except DecodeError as err:
            raise SchemaError(f"proto: {err}") from None
        return transcode.encode(message)

    def to_proto(self, obj: Obj) -> bytes:
        message, _ = self._decode(obj)
        return message.SerializeToString(deterministic=True)

    def _decode(self, obj: Obj) -> tuple[Message, list[str]]:
        try:
            result = transcode.decode(self._cls, obj)
        except TranscodeError as err:
            raise SchemaError(str(err)) from None
        return result.message, list(result.unknown)


class JsonSchema:
    """No schema: any JSON object is accepted as it is (until CRD schemas arrive)."""

    @property
    def proto_message(self) -> str:
        return ""

    @property
    def descriptor(self) -> Descriptor | None:
        return None

    def normalize(self, obj: Obj) -> tuple[Obj, list[str]]:
        return obj, []

    def from_proto(self, data: bytes) -> Obj:
        raise SchemaError("this kind has no protobuf schema")

    def to_proto(self, obj: Obj) -> bytes:
        return b""
