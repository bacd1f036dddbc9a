"""Go encoding/json's vocabulary: JSON value kinds, Go type names, []byte as base64, error words.

kube-apiserver decodes request bodies with a fork of Go's encoding/json (sigs.k8s.io/json), and
its type errors reach clients verbatim, e.g.

    json: cannot unmarshal number into Go struct field ConfigMap.data of type string

naming the JSON value's kind, the innermost Go struct, the path of Go field names from the root
(no list indices, no map keys) and the Go type. This module holds those words and Go's base64
rules, so the transcoder only has to say where a value went wrong.
"""

from __future__ import annotations

import binascii
import functools
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from capstan.options.v1 import options_pb2
from server.machinery.protofields import is_repeated

_GO_SCALARS = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_BYTES: "[]uint8",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_SINT64: "int64",
    FieldDescriptor.TYPE_SFIXED64: "int64",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_SINT32: "int32",
    FieldDescriptor.TYPE_SFIXED32: "int32",
    FieldDescriptor.TYPE_UINT64: "uint64",
    FieldDescriptor.TYPE_FIXED64: "uint64",
    FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_FIXED32: "uint32",
    FieldDescriptor.TYPE_DOUBLE: "float64",
    FieldDescriptor.TYPE_FLOAT: "float32",
}

# Go types of the protobuf well-known types that stand for JSON values (Table cells are interface{}).
_GO_WELL_KNOWN = {
    "google.protobuf.Value": "interface {}",
    "google.protobuf.Struct": "map[string]interface {}",
    "google.protobuf.ListValue": "[]interface {}",
}


class Invalid(Exception):
    """Raised by a field converter; the message loop above it, which knows the Go struct and field, turns it
    into a DecodeError.

    Either a type mismatch (kind of the JSON value, Go type it could not go into), worded with context as
    Go's UnmarshalTypeError, or a finished message (base64, time, quantity). fatal mirrors Go: errors
    returned by a type's UnmarshalJSON (Time, IntOrString, Quantity, ...) end decoding at once, while plain
    type and base64 errors are saved, decoding goes on, and the first one is reported at the end.
    suffix extends the field's path to the element that failed, e.g. "[2]" or ".key".
    """

    def __init__(self, *, kind: str = "", go_type: str = "", message: str = "", fatal: bool = False) -> None:
        super().__init__(message or kind)
        self.kind = kind
        self.go_type = go_type
        self.message = message
        self.fatal = fatal
        self.suffix = ""

    def at(self, suffix: str) -> Invalid:
        """Prefix suffix (an index or map key) to where this happened; returns self for `raise e.at(...)`."""
        self.suffix = suffix + self.suffix
        return self


# The struct kube's json serializer unmarshals a body into to find its kind (SimpleMetaFactory.Interpret), as Go's
# reflect prints its type; its fields match keys in any case.
FIND_KIND = 'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
_TYPE_META_FIELDS = {"apiversion": "apiVersion", "kind": "kind"}


def type_meta_problem(doc: object) -> str | None:
    """What Go's json.Unmarshal says of a document read into FIND_KIND; None when it reads it (null reads as
    nothing). A document that is no object, or the first apiVersion or kind, in document order, that is no string."""
    if doc is None:
        return None
    if type(doc) is not dict:
        return f"json: cannot unmarshal {json_kind(doc)} into Go value of type {FIND_KIND}"
    for key, value in doc.items():
        name = _TYPE_META_FIELDS.get(key.casefold())
        if name is not None and value is not None and type(value) is not str:
            return f"json: cannot unmarshal {json_kind(value)} into Go struct field .{name} of type string"
    return None


def json_kind(value: object) -> str:
    """How Go names a JSON value's kind in an UnmarshalTypeError (bool is checked before int: bool subclasses int)."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def number_literal(value: int | float) -> str:
    """A JSON number as Go quotes it in "number 1.5" (the decoder sees parsed values, so 1e3 reads 1000.0)."""
    return str(value) if isinstance(value, int) else repr(value)


def mismatch(value: object, go_type: str, *, fatal: bool = False) -> Invalid:
    return Invalid(kind=json_kind(value), go_type=go_type, fatal=fatal)


def type_error_message(kind: str, go_type: str, struct: str, field: str) -> str:
    """Go's UnmarshalTypeError.Error(); struct and field are "" for a value outside any struct."""
    if struct or field:
        return f"json: cannot unmarshal {kind} into Go struct field {struct}.{field} of type {go_type}"
    return f"json: cannot unmarshal {kind} into Go value of type {go_type}"


def go_message_type(message: Descriptor) -> str:
    """The Go type of a message, e.g. "v1.ObjectMeta", "intstr.IntOrString": last package segment and name."""
    known = _GO_WELL_KNOWN.get(message.full_name)
    if known is not None:
        return known
    package = message.file.package
    return f"{package.rsplit('.', 1)[-1]}.{message.name}"


def message_type(field: FieldDescriptor) -> Descriptor:
    """The message type of a field whose type is TYPE_MESSAGE."""
    descriptor = field.message_type
    if descriptor is None:
        raise TypeError(f"{field.full_name} is not a message field")
    return descriptor


def go_value_type(field: FieldDescriptor) -> str:
    """The Go type of one value of field (an element, for a repeated field; the map value, for a map).

    Known gap: Kubernetes' named scalar types (types.UID, v1.NamespacePhase, v1.FinalizerName, ...) are
    plain strings in the descriptors, so errors name them "string" where kube-apiserver names the Go type.
    """
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return go_message_type(message_type(field))
    return _GO_SCALARS[field.type]


def map_value(field: FieldDescriptor) -> FieldDescriptor | None:
    """The value field of a map field's entry, or None when field is not a map; maps are keyed by strings
    (JSON object keys), so another key type is refused by name."""
    entry = message_type(field) if field.type == FieldDescriptor.TYPE_MESSAGE else None
    if entry is None or not entry.GetOptions().map_entry:
        return None
    if entry.fields_by_name["key"].type != FieldDescriptor.TYPE_STRING:
        raise NotImplementedError(f"{field.full_name}: map keys other than strings")
    value: FieldDescriptor = entry.fields_by_name["value"]
    return value


def go_field_type(field: FieldDescriptor) -> str:
    """The Go type of the whole field: "string", "[]string", "map[string][]uint8", "[]v1.OwnerReference"."""
    value = map_value(field)
    if value is not None:
        return f"map[string]{go_value_type(value)}"
    if is_repeated(field):
        return f"[]{go_value_type(field)}"
    return go_value_type(field)


_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_SEXTET = {ord(c): i for i, c in enumerate(_ALPHABET)}
_NEWLINES = (ord("\n"), ord("\r"))


def encode_base64(data: bytes) -> str:
    """[]byte as Go's encoding/json writes it: standard alphabet, padded, no newlines."""
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def decode_base64(text: str) -> bytes:
    """A JSON string into []byte as Go's encoding/json reads it (base64.StdEncoding).

    Go requires padding, skips \\r and \\n anywhere, and accepts non-zero trailing bits. On bad
    input raises Invalid with Go's words, e.g. "illegal base64 data at input byte 4" (a byte offset
    into the UTF-8 text). Valid input takes the C fast path; only the rest walks Go's algorithm.
    """
    if len(text) % 4 == 0:  # whole quanta: where Python's strict decoder and Go's agree
        try:
            return binascii.a2b_base64(text, strict_mode=True)
        except ValueError:
            pass
    src = text.encode("utf-8", "surrogatepass")
    out = bytearray()
    si, n = 0, len(src)
    while True:
        quantum: list[int] = []
        while len(quantum) < 4:
            if si == n:
                if not quantum:
                    return bytes(out)
                raise _corrupt(si - len(quantum))
            byte = src[si]
            si += 1
            sextet = _SEXTET.get(byte)
            if sextet is not None:
                quantum.append(sextet)
                continue
            if byte in _NEWLINES:
                continue
            if byte != ord("=") or len(quantum) < 2:
                raise _corrupt(si - 1)
            if len(quantum) == 2:  # "==" expected; the first "=" is consumed
                while si < n and src[si] in _NEWLINES:
                    si += 1
                if si == n:
                    raise _corrupt(n)
                if src[si] != ord("="):
                    raise _corrupt(si - 1)
                si += 1
            while si < n and src[si] in _NEWLINES:
                si += 1
            if si < n:
                raise _corrupt(si)
            bits = 0
            for sextet in quantum:
                bits = bits << 6 | sextet
            bits <<= 6 * (4 - len(quantum))
            out += bits.to_bytes(3, "big")[: len(quantum) - 1]
            return bytes(out)
        bits = quantum[0] << 18 | quantum[1] << 12 | quantum[2] << 6 | quantum[3]
        out += bits.to_bytes(3, "big")


def _corrupt(offset: int) -> Invalid:
    return Invalid(message=f"illegal base64 data at input byte {offset}")


_JSON_INLINE: Any = options_pb2.json_inline  # typed as a plain FieldDescriptor by the generated stub


def is_inline(field: FieldDescriptor) -> bool:
    """The field carries (capstan.options.v1.json_inline): Go embeds its struct with `json:",inline"`."""
    return field.type == FieldDescriptor.TYPE_MESSAGE and bool(field.GetOptions().Extensions[_JSON_INLINE])


@functools.cache
def json_fields(message: Descriptor) -> tuple[tuple[Descriptor, FieldDescriptor], ...]:
    """The fields a message has in JSON, each with the message that declares it, in Go's field order: an
    inline field is replaced by its struct's own JSON fields (recursively), and a field of the enclosing
    struct wins over an inlined one of the same name, as Go's shallower field does.

    Example: Volume -> (Volume, name), (VolumeSource, hostPath), (VolumeSource, emptyDir), ...
    """
    own = {field.name for field in message.fields if not is_inline(field)}
    out: list[tuple[Descriptor, FieldDescriptor]] = []
    for field in message.fields:
        if is_inline(field):
            out.extend(entry for entry in json_fields(message_type(field)) if entry[1].name not in own)
        else:
            out.append((message, field))
    return tuple(out)
