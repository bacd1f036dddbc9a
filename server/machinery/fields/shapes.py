"""The shape of a kind's objects as server-side apply sees it: structured-merge-diff's schema.

    scalar      a leaf: strings, numbers, booleans, and values Kubernetes prints as one (Time,
                Quantity, IntOrString, Duration)
    struct      named fields (a protobuf message); atomic when the type says so (LabelSelector)
    map         free keys with one value shape (labels, data)
    list        "atomic" (replaced whole), "set" (scalars, by value) or "map" (objects, by keys)
    untyped     anything (RawExtension, preserve-unknown-fields): maps of untyped, lists atomic

Lists follow Kubernetes' markers (server/machinery/schema_hints.py) as kube-openapi's schemaconv reads them:
`x-kubernetes-list-type` first, else patchStrategy=merge (with a merge key: a map keyed by it;
without: a set), else atomic. Shapes of messages are built on first use, so recursive messages work.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from server.machinery import schema_hints
from server.machinery.codec.gojson import json_fields
from server.machinery.protofields import is_repeated

SCALAR_MESSAGES = frozenset({
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
    "k8s.io.apimachinery.pkg.api.resource.Quantity",
})
ATOMIC_LIST_MESSAGES = frozenset({"k8s.io.apimachinery.pkg.apis.meta.v1.Verbs"})


class Shape:
    """kind: "scalar", "struct", "map", "list" or "untyped"."""

    __slots__ = ("atomic", "kind")

    def __init__(self, kind: str, atomic: bool = False) -> None:
        self.kind = kind
        self.atomic = atomic

    def field(self, name: str) -> Shape | None:
        """A struct's declared field (None when not declared); a map's or untyped value's shape."""
        return UNTYPED if self.kind == "untyped" else None

    def is_declared(self, name: str) -> bool:
        """Whether name is a field of this struct (rather than a free map key)."""
        return False

    @property
    def leaf(self) -> bool:
        return self.kind == "scalar" or self.atomic


class MapShape(Shape):
    __slots__ = ("elem",)

    def __init__(self, elem: Shape, atomic: bool = False) -> None:
        super().__init__("map", atomic)
        self.elem = elem

    def field(self, name: str) -> Shape:
        return self.elem


@dataclass(frozen=True, slots=True)
class ListType:
    """How a list merges: "atomic", "set" or "map" (items matched by `keys`)."""

    kind: str
    keys: tuple[str, ...] = ()


class ListShape(Shape):
    """key_defaults: (key, value) for map keys with an OpenAPI default; an item that leaves such a key out is
    matched as if it held the default (structured-merge-diff's defaulted list-map keys)."""

    __slots__ = ("elem", "key_defaults", "keys", "list_type")

    def __init__(self, elem: Shape, list_type: ListType, key_defaults: tuple[tuple[str, Any], ...] = ()) -> None:
        super().__init__("list", list_type.kind == "atomic")
        self.elem = elem
        self.list_type = list_type.kind
        self.keys = list_type.keys
        self.key_defaults = key_defaults


class StructShape(Shape):
    """A protobuf message; its fields' shapes are made when first asked for."""

    __slots__ = ("_descriptor", "_fields")

    def __init__(self, descriptor: Descriptor) -> None:
        super().__init__("struct", schema_hints.message_hint(descriptor.full_name).map_type == "atomic")
        self._descriptor = descriptor
        self._fields: dict[str, Shape] | None = None

    def field(self, name: str) -> Shape | None:
        if self._fields is None:  # an inline struct's fields are this struct's own, as JSON has them
            self._fields = {f.name: _field_shape(owner, f) for owner, f in json_fields(self._descriptor)}
        return self._fields.get(name)

    def is_declared(self, name: str) -> bool:
        return self.field(name) is not None


# The list-map key fields kube's OpenAPI gives a default (`+default=...`): ports are keyed by
# (containerPort|port, protocol), and a port written without a protocol is the TCP one.
KEY_DEFAULTS: dict[tuple[str, str], Any] = {
    ("k8s.io.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("k8s.io.api.core.v1.ServicePort", "protocol"): "TCP",
}

SCALAR = Shape("scalar")
UNTYPED = Shape("untyped")


@functools.cache
def of_message(descriptor: Descriptor) -> Shape:
    """The shape of a kind (or any message) from its protobuf descriptor."""
    if descriptor.full_name in SCALAR_MESSAGES:
        return SCALAR
    if descriptor.full_name in ATOMIC_LIST_MESSAGES:
        return ListShape(SCALAR, ListType("atomic"))
    if descriptor.full_name.startswith("google.protobuf.") or descriptor.full_name.endswith(
            (".RawExtension", ".FieldsV1", ".JSONSchemaProps")):
        return UNTYPED
    return StructShape(descriptor)


def list_type(hint: schema_hints.FieldHint) -> ListType:
    """schemaconv's reading of a list's markers."""
    if hint.list_type == "map":
        return ListType("map", hint.list_map_keys)
    if hint.list_type in ("set", "atomic"):
        return ListType(hint.list_type)
    if "merge" in hint.patch_strategy.split(","):
        return ListType("map", (hint.patch_merge_key,)) if hint.patch_merge_key else ListType("set")
    return ListType("atomic")


def _field_shape(message: Descriptor, field: FieldDescriptor) -> Shape:
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        atomic = schema_hints.field_hint(message.full_name, field.name).map_type == "atomic"
        return MapShape(_value_shape(entry.fields_by_name["value"]), atomic)
    if is_repeated(field):
        kind = list_type(schema_hints.field_hint(message.full_name, field.name))
        elem = field.message_type.full_name if field.message_type is not None else ""
        defaults = tuple((k, KEY_DEFAULTS[(elem, k)]) for k in kind.keys if (elem, k) in KEY_DEFAULTS)
        return ListShape(_value_shape(field), kind, defaults)
    return _value_shape(field)


def _value_shape(field: FieldDescriptor) -> Shape:
    return SCALAR if field.message_type is None else of_message(field.message_type)
