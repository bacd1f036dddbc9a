"""An object's metadata as ObjectMeta protobuf bytes, for writes that encode nothing else.

ProtoSchema.to_proto re-encodes only the metadata of most writes (server/machinery/schema.py). Most of that
is managedFields: its entries recur unchanged across an object's writes and across the objects one
manager writes in the same second, so each entry's bytes are kept by its JSON (equal JSON encodes to
equal bytes). managedFields is ObjectMeta's last field (17), so its entries follow the others' bytes.
"""

from __future__ import annotations

from typing import Any

import orjson

from capstan.api.meta.v1 import meta_pb2
from server.machinery.bounded import Bounded
from server.machinery.codec import transcode
from server.machinery.codec.wire import LEN, varint

MANAGED_FIELDS = meta_pb2.ObjectMeta.DESCRIPTOR.fields_by_name["managedFields"].number
_ENTRY_TAG = varint(MANAGED_FIELDS << 3 | LEN)
_ENTRIES: Bounded[bytes, bytes] = Bounded(4096)


def encode(metadata: dict[str, Any]) -> bytes:
    """ObjectMeta's deterministic serialization of `metadata` (a JSON object). Raises
    server.machinery.codec.errors.DecodeError as transcode.decode does."""
    entries = metadata.get("managedFields")
    if type(entries) is not list or not entries or any(type(entry) is not dict for entry in entries):
        return _serialize(metadata)
    head = _serialize({key: value for key, value in metadata.items() if key != "managedFields"})
    return head + b"".join(_entry(entry, index) for index, entry in enumerate(entries))


def _serialize(metadata: dict[str, Any]) -> bytes:
    message = transcode.decode(meta_pb2.ObjectMeta, metadata, path="metadata", type_meta=False).message
    return message.SerializeToString(deterministic=True)


def _entry(entry: dict[str, Any], index: int) -> bytes:
    text = orjson.dumps(entry)
    field = _ENTRIES.get(text)
    if field is None:
        message = transcode.decode(meta_pb2.ManagedFieldsEntry, entry, path=f"metadata.managedFields[{index}]",
                                   type_meta=False).message
        data = message.SerializeToString(deterministic=True)
        field = _ENTRY_TAG + varint(len(data)) + data
        _ENTRIES.put(text, field)
    return field
