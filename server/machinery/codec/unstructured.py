"""apimachinery's DefaultUnstructuredConverter.FromUnstructured refusals, in its words.

kube-apiserver types the result of a strategic merge patch by converting the patched map into the Go type with
this converter, not with encoding/json, so a value of the wrong JSON type is refused in the converter's words
(pkg/runtime/converter.go fromUnstructured): what the decoder here reports as encoding/json's "json: cannot
unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32" kube reports as "unrecognized
type: int32". The source is the value as the map holds it: a string, bool, int64 (a JSON integer), float64,
map or slice.

    string into int32          unrecognized type: int32
    int64 into string          cannot convert int64 to string   (Go converts integers to strings, JSON does not)
    float64 1.5 into int32     cannot convert float64 to int32
    string into []v1.Container cannot restore slice from string
    string into map[...]       cannot restore map from string
    string into v1.PodSpec     cannot restore struct from: string
    "!!" into []byte           error decoding from json: illegal base64 data at input byte 0

A type with a JSON unmarshaler of its own (metav1.Time, resource.Quantity, ...) is handed the value's JSON and
answers in its own words; those are left to the decoder's here.
"""

from __future__ import annotations

import re

from server.machinery import gofmt

_INTS = frozenset({"int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64"})
_FLOATS = frozenset({"float32", "float64"})
_SCALARS = _INTS | _FLOATS | {"bool", "string"}
# Types with converters or JSON unmarshalers of their own: the converter hands them the value's JSON, and their
# words are their own (not reproduced here).
_CUSTOM = frozenset({"resource.Quantity", "intstr.IntOrString", "v1.Time", "v1.MicroTime", "v1.Duration",
                     "runtime.RawExtension", "v1.FieldsV1", "runtime.Object"})
_UNMARSHAL = re.compile(r"json: cannot unmarshal \S+(?: [^ ]+)? into Go (?:struct field \S+|value) of type (.+)$")


def source_kind(value: object) -> str:
    """The reflect.Kind of a JSON value as an unstructured map holds it: bool, int64, float64, string, map, slice."""
    kind = gofmt.go_type(value)
    return {gofmt.MAP_TYPE: "map", gofmt.LIST_TYPE: "slice"}.get(kind, kind)


def refusal(go_type: str, value: object) -> str | None:
    """What fromUnstructured says putting `value` into a field of Go type `go_type` ("int32", "[]v1.Container",
    "map[string]string", "*v1.PodSpec"); None when it would accept it or its words are a custom type's."""
    while go_type.startswith("*"):
        go_type = go_type[1:]
    source = source_kind(value)
    if go_type.startswith("[]"):
        if source == "slice" or (go_type == "[]byte" and source == "string"):
            return None
        return f"cannot restore slice from {source}"
    if go_type.startswith("map["):
        return None if source == "map" else f"cannot restore map from {source}"
    if go_type in _SCALARS:
        return _scalar(source, go_type, value)
    if go_type in _CUSTOM or source == "map":
        return None
    return f"cannot restore struct from: {source}"


def _scalar(source: str, dest: str, value: object) -> str | None:
    if source == dest or (source == "int64" and dest in _INTS | _FLOATS) or (source == "float64" and dest in _FLOATS):
        return None
    if source == "int64" and dest == "string":
        return "cannot convert int64 to string"
    if source == "float64" and dest in _INTS:
        return None if isinstance(value, float) and value.is_integer() else f"cannot convert float64 to {dest}"
    return f"unrecognized type: {dest}"


def from_decode_error(message: str, value: object) -> str | None:
    """The converter's words for what the decoder reported as encoding/json's UnmarshalTypeError `message` about
    `value`; None when the message is no such error, or the converter's words are not known here."""
    if message.startswith("illegal base64 data"):  # a []byte field's string: the converter decodes it itself
        return f"error decoding from json: {message}"
    found = _UNMARSHAL.match(message)
    if found is None:
        return None
    return refusal(found[1], value)
