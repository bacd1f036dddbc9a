"""Server-side apply shapes of custom resources, from their CRD version's structural schema.

structured-merge-diff reads a CRD's schema as kube-openapi's schemaconv does:

    x-kubernetes-int-or-string, scalar types        scalar
    object with properties                           struct (atomic with x-kubernetes-map-type: atomic);
                                                     with x-kubernetes-preserve-unknown-fields, undeclared
                                                     keys are untyped free keys
    object with additionalProperties                 map of the value schema's shape
    object with neither, or no type + preserve       untyped
    array                                            list of the items' shape, by x-kubernetes-list-type:
                                                     atomic (the default for CRDs), set, or map keyed by
                                                     x-kubernetes-list-map-keys

At a resource's root (and in x-kubernetes-embedded-resource objects) apiVersion and kind are scalars and
metadata is ObjectMeta's shape, whatever the schema says, as for every kind. The shapes are
server/machinery/fields/shapes.py's, so the field sets, compare, merge and prune of server/machinery/fields/typed.py
work on
custom resources unchanged.
"""

from __future__ import annotations

from typing import cast

from google.protobuf.descriptor import Descriptor

from capstan.api.meta.v1 import meta_pb2
from server.machinery.crdschema.structural import Structural
from server.machinery.fields.shapes import SCALAR, UNTYPED, ListShape, ListType, MapShape, Shape, of_message

_OBJECT_META = cast(Descriptor, meta_pb2.ObjectMeta.DESCRIPTOR)


class JsonStructShape(Shape):
    """An object with declared properties; their shapes are made when first asked for."""

    __slots__ = ("_fields", "_open", "_resource", "_schema")

    def __init__(self, schema: Structural, *, resource: bool) -> None:
        super().__init__("struct", schema.map_type == "atomic")
        self._schema = schema
        self._resource = resource
        self._open = schema.keeps_unknown
        self._fields: dict[str, Shape] | None = None

    def _all(self) -> dict[str, Shape]:
        if self._fields is None:
            fields = {name: shape_of(prop) for name, prop in self._schema.properties.items()}
            if self._resource:
                fields.update(apiVersion=SCALAR, kind=SCALAR, metadata=of_message(_OBJECT_META))
            self._fields = fields
        return self._fields

    def field(self, name: str) -> Shape | None:
        found = self._all().get(name)
        if found is None and self._open:
            return UNTYPED
        return found

    def is_declared(self, name: str) -> bool:
        return name in self._all()


def resource_shape(schema: Structural | None) -> Shape:
    """The shape of a custom resource (the root of its kind's schema); untyped without a schema."""
    if schema is None:
        return UNTYPED
    return JsonStructShape(schema, resource=True)


def shape_of(schema: Structural) -> Shape:
    if schema.int_or_string:
        return SCALAR
    kind = schema.type
    if kind == "array":
        items = shape_of(schema.items) if schema.items is not None else UNTYPED
        list_type = schema.list_type or "atomic"
        return ListShape(items, ListType(list_type, schema.list_map_keys if list_type == "map" else ()))
    if kind == "object" or (not kind and (schema.properties or schema.additional is not None)):
        if schema.embedded or schema.properties:
            return JsonStructShape(schema, resource=schema.embedded)
        if schema.additional is not None:
            return MapShape(shape_of(schema.additional), atomic=schema.map_type == "atomic")
        if schema.keeps_unknown:
            return UNTYPED
        return JsonStructShape(schema, resource=False)
    if not kind:
        return UNTYPED
    return SCALAR
