"""components.schemas from protobuf descriptors, in the shape kube-apiserver publishes them.

A message becomes a schema named after Kubernetes' Go package path, reversed at the domain:
k8s.io.api.core.v1.ConfigMap -> io.k8s.api.core.v1.ConfigMap. Scalars map to OpenAPI types (int32 and
int64 formats, bytes as `format: byte`), maps to `additionalProperties`, repeated fields to arrays,
message fields to `$ref`s; a `$ref` with siblings (a description, a default) is wrapped in `allOf`, as
OpenAPI 3.0 ignores siblings of `$ref`. Descriptions come from the proto comments (comments.py), the
required fields and list/merge markers from server/machinery/schema_hints.py; an inline field (json_inline, Go's
embedded struct) contributes its struct's fields as properties of the enclosing schema, as openapi-gen
flattens embedded structs; and `default` follows openapi-gen:
`{}` for a struct Go always prints, the zero value for a required scalar and for list and map elements.

Example: ConfigMap.binaryData (map<string, bytes>) ->
    {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}, "description": ...}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from capstan.options.v1 import options_pb2
from gateway.openapi.comments import Comments
from server.machinery.codec.gojson import json_fields, map_value, message_type
from server.machinery.protofields import is_repeated
from server.machinery.schema_hints import ALWAYS_PRINTED, DECLARED_DEFAULTS, field_hint, message_hint

Schema = dict[str, Any]
GVK = tuple[str, str, str]  # (group, version, kind)

REF = "#/components/schemas/"

API_VERSION = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should convert "
    "recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
KIND = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer this "
    "from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
OBJECT_META = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
LIST_META = (
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)

META = "k8s.io.apimachinery.pkg.apis.meta.v1."

# Proto package prefix -> OpenAPI name prefix (the Go import path's domain, reversed).
_PACKAGES = (("k8s.io.apiextensions_apiserver.", "io.k8s.apiextensions-apiserver."),
             ("k8s.io.kube_aggregator.", "io.k8s.kube-aggregator."), ("k8s.io.", "io.k8s."))

# kube's descriptions of the well-known types whose Go doc comments run to several paragraphs (1.28's text).
QUANTITY = (
    "Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling "
    "in JSON and YAML, in addition to String() and AsInt64() accessors.\n\n"
    "The serialization format is:\n\n"
    "``` <quantity>        ::= <signedNumber><suffix>\n\n"
    "\t(Note that <suffix> may be empty, from the \"\" case in <decimalSI>.)\n\n"
    "<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | <digit><digits> <number>        "
    "  ::= <digits> | <digits>.<digits> | <digits>. | .<digits> <sign>            ::= \"+\" | \"-\" "
    "<signedNumber>    ::= <number> | <sign><number> <suffix>          ::= <binarySI> | <decimalExponent> "
    "| <decimalSI> <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n"
    "\t(International System of units; See: http://physics.nist.gov/cuu/Units/binary.html)\n\n"
    "<decimalSI>       ::= m | \"\" | k | M | G | T | P | E\n\n"
    "\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the capitalization.)\n\n"
    "<decimalExponent> ::= \"e\" <signedNumber> | \"E\" <signedNumber> ```\n\n"
    "No matter which of the three exponent forms is used, no quantity may represent a number greater than "
    "2^63-1 in magnitude, nor may it have more than 3 decimal places. Numbers larger or more precise will "
    "be capped or rounded up. (E.g.: 0.1m will rounded up to 1m.) This may be extended in the future if we "
    "require larger or smaller quantities.\n\n"
    "When a Quantity is parsed from a string, it will remember the type of suffix it had, and will use the "
    "same type again when it is serialized.\n\n"
    "Before serializing, Quantity will be put in \"canonical form\". This means that Exponent/suffix will be "
    "adjusted up or down (with a corresponding increase or decrease in Mantissa) such that:\n\n"
    "- No precision is lost - No fractional digits will be emitted - The exponent (or suffix) is as large "
    "as possible.\n\n"
    "The sign will be omitted unless the number is negative.\n\n"
    "Examples:\n\n"
    "- 1.5 will be serialized as \"1500m\" - 1.5Gi will be serialized as \"1536Mi\"\n\n"
    "Note that the quantity will NEVER be internally represented by a floating point number. That is the "
    "whole point of this exercise.\n\n"
    "Non-canonical values will still parse as long as they are well formed, but will be re-emitted in "
    "their canonical form. (So always use canonical form, or don't diff.)\n\n"
    "This format is intended to make it difficult to use these numbers without writing some sort of "
    "special handling code in the hopes that that will cause implementors to also use a fixed point "
    "implementation."
)
FIELDS_V1 = (
    "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.\n\n"
    "Each key is either a '.' representing the field itself, and will always map to an empty set, or a "
    "string representing a sub-field or item. The string will follow one of these four formats: "
    "'f:<name>', where <name> is the name of a field in a struct, or key in a map 'v:<value>', where "
    "<value> is the exact json formatted value of a list item 'i:<index>', where <index> is position of a "
    "item in a list 'k:<keys>', where <keys> is a map of  a list item's key fields to their unique values "
    "If a key maps to an empty Fields value, the field that key represents is part of the set.\n\n"
    "The exact format is defined in sigs.k8s.io/structured-merge-diff"
)
RAW_EXTENSION = (
    "RawExtension is used to hold extensions in external versions.\n\n"
    "To use this, make a field which has RawExtension as its type in your external, versioned struct, and "
    "Object in your internal struct. You also need to register your various plugin types.\n\n"
    "// Internal package:\n\n"
    "\ttype MyAPIObject struct {\n\t\truntime.TypeMeta `json:\",inline\"`\n\t\tMyPlugin runtime.Object "
    "`json:\"myPlugin\"`\n\t}\n\n"
    "\ttype PluginA struct {\n\t\tAOption string `json:\"aOption\"`\n\t}\n\n"
    "// External package:\n\n"
    "\ttype MyAPIObject struct {\n\t\truntime.TypeMeta `json:\",inline\"`\n\t\tMyPlugin runtime.RawExtension "
    "`json:\"myPlugin\"`\n\t}\n\n"
    "\ttype PluginA struct {\n\t\tAOption string `json:\"aOption\"`\n\t}\n\n"
    "// On the wire, the JSON will look something like this:\n\n"
    "\t{\n\t\t\"kind\":\"MyAPIObject\",\n\t\t\"apiVersion\":\"v1\",\n\t\t\"myPlugin\": {\n\t\t\t\"kind\":\"PluginA\",\n"
    "\t\t\t\"aOption\":\"foo\",\n\t\t},\n\t}\n\n"
    "So what happens? Decode first uses json or yaml to unmarshal the serialized data into your external "
    "MyAPIObject. That causes the raw JSON to be stored, but not unpacked. The next step is to copy (using "
    "pkg/conversion) into the internal struct. The runtime package's DefaultScheme has conversion "
    "functions installed which will unpack the JSON stored in RawExtension, turning it into the correct "
    "object type, and storing it in the Object. (TODO: In the case where the object is of an unknown type, "
    "a runtime.Unknown object will be created and stored.)"
)

# The messages of server/machinery/codec/wellknown.py whose JSON is a string or an opaque value: each is a
# component of kube's own shape for the Go type, never an object of the message's fields.
WELL_KNOWN: Mapping[str, Schema] = {
    META + "Time": {
        "description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  "
                       "Wrappers are provided for many of the factory methods that the time package offers.",
        "format": "date-time", "type": "string",
    },
    META + "MicroTime": {
        "description": "MicroTime is version of Time with microsecond level precision.",
        "format": "date-time", "type": "string",
    },
    META + "Duration": {
        "description": "Duration is a wrapper around time.Duration which supports correct marshaling to YAML and "
                       "JSON. In particular, it marshals into strings, which can be used as map keys in json.",
        "type": "string",
    },
    META + "FieldsV1": {
        "description": FIELDS_V1,
        "type": "object",
    },
    "k8s.io.apimachinery.pkg.runtime.RawExtension": {
        "description": RAW_EXTENSION,
        "type": "object",
    },
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML "
                       "marshalling and unmarshalling, it produces or consumes the inner type.  This allows you "
                       "to have, for example, a JSON field that can accept a name or number.",
        "format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}],
    },
    # Its JSON names ($ref, x-kubernetes-...) are not the proto's (server/machinery/codec/jsonschemaprops.py).
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps": {
        "description": "JSONSchemaProps is a JSON-Schema following Specification Draft 4 (http://json-schema.org/).",
        "type": "object",
    },
    "k8s.io.apimachinery.pkg.api.resource.Quantity": {
        "description": QUANTITY,
        "oneOf": [{"type": "string"}, {"type": "number"}],
    },
}

# Well-known messages Go declares as plain JSON values: no component; the field carries the shape.
INLINE: Mapping[str, Schema] = {
    META + "Verbs": {"items": {"default": "", "type": "string"}, "type": "array"},
    "k8s.io.api.certificates.v1.ExtraValue": {"items": {"default": "", "type": "string"}, "type": "array"},
    "google.protobuf.Value": {"type": "object"},
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.ListValue": {"items": {"type": "object"}, "type": "array"},
}

# Kinds whose Go type inlines TypeMeta (apiVersion, kind) but has no metadata field to tell it by.
TYPE_META = frozenset(META + name for name in (
    "DeleteOptions", "APIResourceList", "APIGroupList", "APIGroup", "APIVersions",
    "CreateOptions", "GetOptions", "ListOptions", "PatchOptions", "UpdateOptions",
))

_F = FieldDescriptor
_SCALARS: Mapping[int, tuple[str, str]] = {
    _F.TYPE_STRING: ("string", ""), _F.TYPE_BOOL: ("boolean", ""), _F.TYPE_BYTES: ("string", "byte"),
    _F.TYPE_ENUM: ("string", ""), _F.TYPE_DOUBLE: ("number", "double"), _F.TYPE_FLOAT: ("number", "float"),
    **{t: ("integer", "int32") for t in (_F.TYPE_INT32, _F.TYPE_SINT32, _F.TYPE_SFIXED32, _F.TYPE_UINT32,
                                          _F.TYPE_FIXED32)},
    **{t: ("integer", "int64") for t in (_F.TYPE_INT64, _F.TYPE_SINT64, _F.TYPE_SFIXED64, _F.TYPE_UINT64,
                                          _F.TYPE_FIXED64)},
}
_ZERO: Mapping[str, object] = {"string": "", "boolean": False, "integer": 0, "number": 0}
_EMIT_ZERO: Any = options_pb2.emit_zero  # typed as a plain FieldDescriptor by the generated stub


def schema_name(full_name: str) -> str:
    """The component name of a message: "k8s.io.api.core.v1.ConfigMap" -> "io.k8s.api.core.v1.ConfigMap"."""
    for proto, openapi in _PACKAGES:
        if full_name.startswith(proto):
            return openapi + full_name[len(proto):]
    return full_name


def with_siblings(schema: Schema, **siblings: Any) -> Schema:
    """schema plus siblings; a bare $ref moves into allOf, since OpenAPI 3.0 ignores a $ref's siblings."""
    if not siblings:
        return schema
    if "$ref" in schema:
        return {"allOf": [schema], **siblings}
    return {**schema, **siblings}


class SchemaSet:
    """The components one document needs: ref() adds a message and everything it refers to.

    gvks: message full name -> the (group, version, kind)s it is served as, for x-kubernetes-group-version-kind.
    """

    def __init__(self, comments: Comments, gvks: Mapping[str, Sequence[GVK]]) -> None:
        self._comments = comments
        self._gvks = gvks
        self.schemas: dict[str, Schema] = {}

    def ref(self, message: Descriptor) -> str:
        name = schema_name(message.full_name)
        if name not in self.schemas:
            self.schemas[name] = {}  # reserved first, so a message that refers to itself ends here
            self.schemas[name] = self._message(message)
        return REF + name

    def add(self, name: str, schema: Schema) -> str:
        """A component with no message behind it (meta/v1 Patch)."""
        self.schemas[name] = schema
        return REF + name

    def _message(self, message: Descriptor) -> Schema:
        full = message.full_name
        known = WELL_KNOWN.get(full)
        if known is not None:
            return dict(known)
        hint = message_hint(full)
        properties: Schema = {}
        if full in TYPE_META or _has_object_metadata(message):
            properties["apiVersion"] = {"description": API_VERSION, "type": "string"}
            properties["kind"] = {"description": KIND, "type": "string"}
        for owner, field in json_fields(message):  # an inline struct's fields are this schema's properties
            properties[field.name] = self._field(owner, field, required=field.name in hint.required)
        schema: Schema = {"type": "object"}
        description = self._comments.message(full)
        if description:
            schema["description"] = description
        if properties:
            schema["properties"] = properties
        if hint.required:
            schema["required"] = list(hint.required)
        if hint.map_type:
            schema["x-kubernetes-map-type"] = hint.map_type
        gvks = self._gvks.get(full)
        if gvks:
            schema["x-kubernetes-group-version-kind"] = [
                {"group": group, "kind": kind, "version": version} for group, version, kind in gvks
            ]
        return schema

    def _field(self, owner: Descriptor, field: FieldDescriptor, *, required: bool) -> Schema:
        value = map_value(field)
        declared = DECLARED_DEFAULTS.get((owner.full_name, field.name))
        if value is not None:
            schema: Schema = {"additionalProperties": self._element(value), "type": "object"}
        elif is_repeated(field):
            schema = {"items": self._element(field), "type": "array"}
        elif field.type == _F.TYPE_MESSAGE:
            schema = self._value(message_type(field))
        else:
            schema = _scalar(field)
            if declared is not None:
                schema["default"] = declared
            elif required or field.name in ALWAYS_PRINTED.get(owner.full_name, ()):
                schema["default"] = _ZERO[schema["type"]]
        extras: dict[str, Any] = {}
        if field.type == _F.TYPE_MESSAGE and value is None and not is_repeated(field) \
                and INLINE.get(message_type(field).full_name, {}).get("type") != "array" \
                and (field.GetOptions().Extensions[_EMIT_ZERO] or declared is not None):
            extras["default"] = {}  # a struct Go always prints (not a pointer), a Time or Quantity as any other
        description = self._comments.field(owner.full_name, field.name) or _standard(field)
        if description:
            extras["description"] = description
        hint = field_hint(owner.full_name, field.name)
        if hint.list_type:
            extras["x-kubernetes-list-type"] = hint.list_type
        if hint.list_map_keys:
            extras["x-kubernetes-list-map-keys"] = list(hint.list_map_keys)
        if hint.patch_strategy:
            extras["x-kubernetes-patch-strategy"] = hint.patch_strategy
        if hint.patch_merge_key:
            extras["x-kubernetes-patch-merge-key"] = hint.patch_merge_key
        if hint.map_type:
            extras["x-kubernetes-map-type"] = hint.map_type
        return with_siblings(schema, **extras)

    def _element(self, field: FieldDescriptor) -> Schema:
        """One element of a list, or one value of a map: Go prints zero elements, so each has a default."""
        if field.type == _F.TYPE_MESSAGE:
            schema = self._value(message_type(field))
            return with_siblings(schema, default={}) if _struct(schema, field) else schema
        schema = _scalar(field)
        if schema.get("format") != "byte":
            schema["default"] = _ZERO[schema["type"]]
        return schema

    def _value(self, message: Descriptor) -> Schema:
        inline = INLINE.get(message.full_name)
        if inline is not None:
            return dict(inline)
        return {"$ref": self.ref(message)}


def _struct(schema: Schema, field: FieldDescriptor) -> bool:
    """Whether field's values are refs to an object schema (not to a well-known JSON value)."""
    return "$ref" in schema and message_type(field).full_name not in WELL_KNOWN


def _scalar(field: FieldDescriptor) -> Schema:
    kind, fmt = _SCALARS[field.type]
    return {"format": fmt, "type": kind} if fmt else {"type": kind}


def _has_object_metadata(message: Descriptor) -> bool:
    field = message.fields_by_name.get("metadata")
    return (field is not None and field.message_type is not None
            and field.message_type.full_name in (META + "ObjectMeta", META + "ListMeta"))


def _standard(field: FieldDescriptor) -> str:
    """Kubernetes' standard wording for an undocumented metadata field."""
    if field.name != "metadata" or field.message_type is None:
        return ""
    return {META + "ObjectMeta": OBJECT_META, META + "ListMeta": LIST_META}.get(field.message_type.full_name, "")
