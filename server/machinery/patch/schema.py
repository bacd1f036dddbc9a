"""The Go types a strategic merge patch walks, read from a kind's protobuf descriptors.

apimachinery's strategicpatch (PatchMetaFromStruct) reflects on the Go struct of the kind: a JSON
object is a struct, a map or a well-known value type; a JSON array is a slice; a field's struct
tags `patchStrategy` and `patchMergeKey` say how it merges. Capstan has the protobuf messages
instead, which carry the same shape (message -> struct, map field -> map, repeated field -> slice),
and server/machinery/schema_hints.py, which carries the tags. Lookups fail with strategicpatch's messages,
which name Go kinds and struct names:

    lookup_struct(struct_of(ConfigMap), "nope")  ->  500 'unable to find api field in struct
                                                      ConfigMap for the json field "nope"'

Only the patch strategy and merge key matter here: strategic merge patch ignores list_type and
map_type (server-side apply's markers), so an atomic struct such as LabelSelector still merges
field by field, as in kube-apiserver.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from server.machinery import schema_hints
from server.machinery.codec.gojson import json_fields
from server.machinery.codec.wellknown import WELL_KNOWN
from server.machinery.gofmt import go_quote
from server.machinery.patch.errors import failed
from server.machinery.protofields import is_repeated

_VERBS = schema_hints.META_V1 + "Verbs"  # a well-known type that is a Go slice ([]string)


@dataclass(frozen=True, slots=True)
class GoType:
    """kind: Go's reflect.Kind name ("struct", "map", "slice", "string", ...).
    name: the struct's name, for messages. message: the struct's fields (None: no JSON fields, as
    for metav1.Time). elem: a map's value type or a slice's element type."""

    kind: str
    name: str = ""
    message: Descriptor | None = None
    elem: GoType | None = None


@dataclass(frozen=True, slots=True)
class PatchMeta:
    """A field's struct tags: patchStrategy split on commas, and patchMergeKey."""

    strategies: tuple[str, ...]
    merge_key: str


STRING = GoType("string")


def struct_of(descriptor: Descriptor) -> GoType:
    return GoType("struct", descriptor.name, descriptor)


def lookup_struct(parent: GoType, key: str) -> tuple[GoType, PatchMeta]:
    """The type and tags of the field `key` of a struct (forkedjson.LookupPatchMetadataForStruct)."""
    if parent.kind != "struct":
        raise failed(f"merging an object in json but data type is not struct, instead is: {parent.kind}")
    message = parent.message
    found = _field(message, key) if message is not None else None
    if found is None:
        raise failed(f"unable to find api field in struct {parent.name} for the json field {go_quote(key)}")
    owner, field = found
    hint = schema_hints.field_hint(owner.full_name, field.name)
    return _field_type(field), PatchMeta(tuple(hint.patch_strategy.split(",")), hint.patch_merge_key)


def lookup_slice(parent: GoType, key: str) -> tuple[GoType, PatchMeta]:
    """The element type and tags of the list field `key` (PatchMetaFromStruct.LookupPatchMetadataForSlice)."""
    field_type, meta = lookup_struct(parent, key)
    if field_type.kind != "slice" or field_type.elem is None:
        raise failed(f"expected slice or array type, but got: {parent.kind}")
    return field_type.elem, meta


Found = tuple[Descriptor, FieldDescriptor]  # the field, and the message that declares it (an inlined struct's)


def _field(message: Descriptor, key: str) -> Found | None:
    """The field encoding/json would fill from `key`: its exact name, else the first case-insensitive match.
    Fields of inline structs (Volume's volumeSource, Probe's handler) are the enclosing struct's, as in Go."""
    exact, folded = _fields(message)
    return exact.get(key) or folded.get(key.casefold())


@functools.cache
def _fields(message: Descriptor) -> tuple[dict[str, Found], dict[str, Found]]:
    fields = json_fields(message)
    exact = {field.name: (owner, field) for owner, field in fields}  # Capstan's field names are the JSON names
    folded: dict[str, Found] = {}
    for owner, field in fields:
        folded.setdefault(field.name.casefold(), (owner, field))
    return exact, folded


def _field_type(field: FieldDescriptor) -> GoType:
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        return GoType("map", elem=_value_type(entry.fields_by_name["value"]))
    if is_repeated(field):
        return GoType("slice", elem=_value_type(field))
    return _value_type(field)


def _value_type(field: FieldDescriptor) -> GoType:
    message = field.message_type
    if message is None:
        return _SCALARS.get(field.type, STRING)
    if message.full_name == _VERBS:
        return GoType("slice", "Verbs", elem=STRING)
    if message.full_name in WELL_KNOWN:  # Time, Quantity, IntOrString...: Go structs with no JSON fields
        return GoType("struct", message.name)
    return struct_of(message)


_SCALARS: dict[int, GoType] = {
    FieldDescriptor.TYPE_BOOL: GoType("bool"),
    FieldDescriptor.TYPE_INT32: GoType("int32"),
    FieldDescriptor.TYPE_SINT32: GoType("int32"),
    FieldDescriptor.TYPE_SFIXED32: GoType("int32"),
    FieldDescriptor.TYPE_INT64: GoType("int64"),
    FieldDescriptor.TYPE_SINT64: GoType("int64"),
    FieldDescriptor.TYPE_SFIXED64: GoType("int64"),
    FieldDescriptor.TYPE_UINT32: GoType("uint32"),
    FieldDescriptor.TYPE_FIXED32: GoType("uint32"),
    FieldDescriptor.TYPE_UINT64: GoType("uint64"),
    FieldDescriptor.TYPE_FIXED64: GoType("uint64"),
    FieldDescriptor.TYPE_FLOAT: GoType("float32"),
    FieldDescriptor.TYPE_DOUBLE: GoType("float64"),
    FieldDescriptor.TYPE_BYTES: GoType("slice", elem=GoType("uint8")),
}
