"""Protobuf messages for custom resources (beyond Kubernetes): descriptors registered with the core, kept in
its store, and the schema of a custom resource served in protobuf as well as JSON.

A client registers a FileDescriptorSet (CoreService.RegisterDescriptors, what `protoc --include_imports
--descriptor_set_out` writes); each set is stored under /capstan.dev/descriptorsets/<sha256> and loaded into
the process's descriptor pool, then and at every start. A CRD annotated

    capstan.dev/protobuf-message: example.v1.Widget

has its kind stored and served in that message too: the stored value carries both renderings, gRPC clients
and the Kubernetes protobuf envelope get the message's bytes, JSON is transcoded from the same descriptor
(server/machinery/codec), and the CRD's schema still prunes, defaults and validates. The message's field 1 must be
`metadata` (ObjectMeta); its other fields are the object's JSON keys (spec, status, ...).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError, Message

from server.machinery import errors
from server.machinery.codec import transcode
from server.machinery.codec.errors import DecodeError as TranscodeError
from server.machinery.crdschema.structural import Structural
from server.machinery.schema import JsonSchema, SchemaError, proto_to_json
from server.machinery.values import Obj
from server.objects.storeerrors import Store, create_unless_present

log = logging.getLogger(__name__)

ANNOTATION = "capstan.dev/protobuf-message"
PREFIX = b"/capstan.dev/descriptorsets/"
OBJECT_META = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class Descriptors:
    """The registered descriptor sets, in the default descriptor pool (shared with the built-in kinds' files)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._pool = descriptor_pool.Default()
        self.listeners: list[Callable[[], None]] = []  # told when messages become known (the CRD controller)

    async def load(self) -> None:
        """Load every set stored before (at core start)."""
        listed = await self._store.list(PREFIX)
        for kv in listed.kvs:
            try:
                self._add(descriptor_pb2.FileDescriptorSet.FromString(kv.value))
            except (DecodeError, TypeError, ValueError) as err:
                log.warning("stored descriptor set %s is unusable: %s", kv.key.decode(), err)

    async def register(self, files: descriptor_pb2.FileDescriptorSet) -> list[str]:
        """Add and keep a set; the full names of the messages it defines. 400 for files the pool refuses."""
        try:
            messages = self._add(files)
        except (TypeError, ValueError) as err:
            raise errors.bad_request(f"descriptors not registered: {err}") from None
        data = files.SerializeToString(deterministic=True)
        key = PREFIX + hashlib.sha256(data).hexdigest().encode()
        refused = await create_unless_present(self._store, key, data)
        if refused:
            raise errors.internal(f"storing descriptors: {refused}")
        for listener in self.listeners:
            listener()
        return messages

    def message(self, full_name: str) -> Descriptor | None:
        try:
            found: Descriptor = self._pool.FindMessageTypeByName(full_name)
            return found
        except KeyError:
            return None

    def _add(self, files: descriptor_pb2.FileDescriptorSet) -> list[str]:
        messages: list[str] = []
        for file in files.file:
            try:
                existing = self._pool.FindFileByName(file.name)
            except KeyError:
                existing = None
            if existing is None:
                self._pool.AddSerializedFile(file.SerializeToString())
            elif existing.serialized_pb != file.SerializeToString():
                known = descriptor_pb2.FileDescriptorProto.FromString(existing.serialized_pb)
                if _stripped(known) != _stripped(file):
                    raise ValueError(f"{file.name} is already known with other contents")
            messages.extend(f"{file.package}.{m.name}" if file.package else m.name for m in file.message_type)
        return messages


def _stripped(file: descriptor_pb2.FileDescriptorProto) -> bytes:
    """A file without its source info (protoc may or may not include it), to compare two copies."""
    copy = descriptor_pb2.FileDescriptorProto()
    copy.CopyFrom(file)
    copy.ClearField("source_code_info")
    return copy.SerializeToString(deterministic=True)


def usable(message: Descriptor | None) -> str:
    """"" when a message can carry a custom resource, else why not."""
    if message is None:
        return "is not registered (CoreService.RegisterDescriptors)"
    field = message.fields_by_number.get(1)
    if field is None or field.name != "metadata" or field.message_type is None or (
            field.message_type.full_name != OBJECT_META):
        return f"must have field 1 `metadata` of type {OBJECT_META}"
    return ""


class ProtoJsonSchema(JsonSchema):
    """A custom resource with a protobuf message: the CRD's schema for pruning, defaulting and validation, the
    message for the protobuf rendering (and the JSON keys the message lacks are unknown fields, so the two
    renderings hold the same object)."""

    def __init__(self, message: Descriptor, structural: Structural | None, *, openapi: bytes = b"") -> None:
        super().__init__(structural, openapi=openapi)
        self._message = message
        self._cls: type[Message] = message_factory.GetMessageClass(message)

    @property
    def proto_message(self) -> str:
        return str(self._message.full_name)

    @property
    def descriptor(self) -> Descriptor:
        return self._message

    def normalize(self, obj: Obj) -> tuple[Obj, list[str]]:
        out, unknown = super().normalize(obj)
        try:
            decoded = transcode.decode(self._cls, out)
        except TranscodeError as err:
            raise SchemaError(str(err)) from None
        for path in decoded.unknown:
            unknown.append(path)
            _drop(out, path)
        return out, unknown

    def from_proto(self, data: bytes) -> Obj:
        return proto_to_json(self._cls, data)

    def to_proto(self, obj: Obj) -> bytes:
        try:
            decoded = transcode.decode(self._cls, obj)
        except TranscodeError as err:
            raise SchemaError(str(err)) from None
        return decoded.message.SerializeToString(deterministic=True)


def _drop(obj: Obj, path: str) -> None:
    """Remove a simple dotted path (the transcoder's unknown-field report; list items are left alone)."""
    if "[" in path:
        return
    *parents, last = path.split(".")
    node: object = obj
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(last, None)
