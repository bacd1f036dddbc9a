"""Kubernetes JSON <-> protobuf for any message type, driven purely by descriptors.

Capstan stores every object revision as protobuf and as JSON, and its object semantics work on the
JSON form as Python dicts (Kubernetes' "unstructured" shape). This module converts between the two
exactly as kube-apiserver's Go types do, for every message of protos/capstan/api with no per-kind
code; the per-type work is done once, in server/machinery/codec/plan.py.

The Kubernetes JSON conventions (Go's encoding/json on the k8s types), both ways:
  * field names are the proto field names (already camelCase); int32/int64 are JSON numbers;
    bytes are standard base64; maps are objects; repeated fields are arrays;
  * meta/v1 Time is RFC 3339 to the second ("2024-05-01T10:00:00Z"), MicroTime has six fraction
    digits, Duration is a Go duration string ("1h0m0s"), IntOrString a number or a string,
    Quantity its string, FieldsV1 and RawExtension the JSON they hold, google.protobuf.Value any
    JSON value (server/machinery/codec/wellknown.py).

decode (JSON dict -> message), as kube-apiserver's decoder (sigs.k8s.io/json) behaves:
  * keys are case-sensitive; a key the schema lacks is an unknown field: recorded by its path in
    Kubernetes' form ("spec.foo", "spec.containers[0].foo"), then dropped;
  * null leaves a field unset; every other value must have the field's JSON type or the call raises
    DecodeError worded as kube-apiserver words it, e.g.
        json: cannot unmarshal number into Go struct field ConfigMap.data of type string
    with the first plain type error winning unless a well-known type's own error (a bad time, a bad
    quantity) comes later, which Go reports instead.
encode (message -> JSON dict), as kube-apiserver prints Go values:
  * a zero scalar is omitted (omitempty) unless its field carries (capstan.options.v1.emit_zero),
    which Kubernetes needs for Go pointers (ConfigMap.immutable=false is printed) and for fields
    without omitempty; see protos/capstan/options/v1/options.proto for the rule per field shape;
  * every sub-message that is present is printed ("spec": {}), except a zero Time, which prints as
    null where its field is marked emit_zero (a Go Time value) and not at all otherwise (a *Time);
    empty lists and maps are omitted unless emit_zero (an empty list then prints null, as a nil slice).
Example: a client-go ConfigMap on the wire carries generateName "" and an empty creationTimestamp;
encode prints no generateName and "creationTimestamp": null, as kube-apiserver does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import orjson
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from server.machinery.codec.decoding import decode_object
from server.machinery.codec.encoding import encode_object
from server.machinery.codec.errors import DecodeError
from server.machinery.codec.gojson import go_message_type, json_kind, type_error_message
from server.machinery.codec.plan import plan_for
from server.machinery.codec.planned import State

M = TypeVar("M", bound=Message)

_INDEX = re.compile(r"\[\d+\]")


@dataclass(frozen=True, slots=True)
class DecodeResult(Generic[M]):
    """message: the decoded message; unknown: paths of the fields it dropped, in document order."""

    message: M
    unknown: list[str]


def decode(message_class: type[M], obj: Any, *, path: str = "", type_meta: bool = True) -> DecodeResult[M]:
    """The message of type message_class that the JSON object obj (a dict, as parsed) stands for.

    path: where obj sits in a larger document ("" for a request body): prefixes every reported path.
    type_meta: obj is a whole object, whose "apiVersion" and "kind" (if message_class has no such
        fields) are Kubernetes TypeMeta: they must be strings, are not copied into the message (which
        has no TypeMeta) and are not unknown; the caller reads them from obj.
    Raises DecodeError; its message is what kube-apiserver puts after `<Kind> in version "<v>" cannot be
    handled as a <Kind>: `.
    """
    plan = plan_for(cast(Descriptor, message_class.DESCRIPTOR))
    go_path = _INDEX.sub("", path) if path else ""
    if type(obj) is not dict:
        go_type = go_message_type(plan.descriptor)
        raise DecodeError(type_error_message(json_kind(obj), go_type, "", ""), path=path)
    type_keys = plan.type_meta if type_meta else ()
    for key in type_keys:
        value = obj.get(key)
        if value is not None and type(value) is not str:  # kube-apiserver reads these first, into strings
            kind = json_kind(value)
            raise DecodeError(
                "couldn't get version/kind; json parse error: " + type_error_message(kind, "string", "", key),
                path=f"{path}.{key}" if path else key,
            )
    state = State()
    kwargs = decode_object(plan, obj, state, path, go_path, type_keys)
    if state.saved is not None:
        raise state.saved
    return DecodeResult(message_class(**kwargs), state.unknown)


def encode(message: Message, *, kind: str | None = None, api_version: str | None = None) -> dict[str, Any]:
    """The JSON object kube-apiserver prints for message, as a dict.

    kind and api_version, when given, come first as "kind" and "apiVersion" (Go's TypeMeta order); the
    messages themselves carry no TypeMeta. Raises EncodeError for a message with no JSON form.
    """
    out: dict[str, Any] = {}
    if kind is not None:
        out["kind"] = kind
    if api_version is not None:
        out["apiVersion"] = api_version
    return encode_object(plan_for(cast(Descriptor, message.DESCRIPTOR)), message, out)


def encode_json_bytes(message: Message, *, kind: str | None = None, api_version: str | None = None) -> bytes:
    """encode() serialized compactly with orjson: the bytes to store or send."""
    return orjson.dumps(encode(message, kind=kind, api_version=api_version))
