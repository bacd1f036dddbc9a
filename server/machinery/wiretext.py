"""Strings in a CoreService request that are not UTF-8.

Upstream's meta/v1 messages (ListOptions, PatchOptions, DeleteOptions, ...) are proto2, whose parser does not
check that a string is UTF-8: python's protobuf then hands the field over as bytes, where every option check
expects text (a labelSelector of b"a\\xffb" would be a 500). Go keeps such bytes in a string and mostly refuses them
later as an invalid value; here the request is refused as soon as it is parsed, naming the field.
"""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from server.machinery.protofields import is_repeated


def undecodable(message: Message, prefix: str = "") -> str:
    """The path of the first string field (at any depth) that holds bytes that are not UTF-8; '' if none."""
    for field, value in message.ListFields():
        path = f"{prefix}{field.name}"
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            for key, item in value.items():
                if isinstance(key, bytes) or isinstance(item, bytes):
                    return f"{path}[{key!r}]"
                if value_field.type == FieldDescriptor.TYPE_MESSAGE and (found := undecodable(item, f"{path}.")):
                    return found
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            for index, item in enumerate(value if _repeated(field) else [value]):
                if found := undecodable(item, f"{path}[{index}]." if _repeated(field) else f"{path}."):
                    return found
        elif field.type == FieldDescriptor.TYPE_STRING and any(
                isinstance(item, bytes) for item in (value if _repeated(field) else [value])):
            return path
    return ""


def _repeated(field: FieldDescriptor) -> bool:
    return is_repeated(field)
