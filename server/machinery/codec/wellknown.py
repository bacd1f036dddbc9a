"""Messages whose JSON form is not an object of their fields: the Kubernetes and protobuf "well-known" types.

In Go these types implement MarshalJSON/UnmarshalJSON, so their JSON is a string, a number or any
JSON value, while the protobuf wire carries a small message:

    meta/v1 Time        "2024-05-01T10:00:00Z"            {seconds}, second precision
    meta/v1 MicroTime   "2024-05-01T10:00:00.123456Z"     {seconds, nanos}
    meta/v1 Duration    "1h0m0s"                          {duration: nanoseconds}
    meta/v1 FieldsV1    the JSON object it holds          {Raw: that JSON's bytes}
    meta/v1 Verbs       ["get", "list"]                   {items}
    runtime RawExtension  the JSON value it holds         {raw: that JSON's bytes}
    intstr IntOrString  8080 or "http"                    {type, intVal, strVal}
    resource Quantity   "500m" (a bare number is read;    {string}
                        printed canonical: "0.5" -> "500m")
    google.protobuf Value / Struct / ListValue            any JSON value / object / array (Table cells)
    apiextensions/v1 JSONSchemaProps   an OpenAPI schema   its fields ($ref, x-kubernetes-...: jsonschemaprops.py)

Each entry here converts one value both ways; the transcoder looks them up by message full name and
never descends into their fields. Decoding errors follow Go: these types' UnmarshalJSON errors end
decoding at once (fatal), e.g. a bad time in creationTimestamp.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from server.machinery.codec import gotime
from server.machinery.codec.errors import EncodeError
from server.machinery.codec.gojson import Invalid, mismatch, number_literal
from server.machinery.codec.jsonschemaprops import SCHEMA_MESSAGE, decode_schema, encode_schema
from server.machinery.codec.quantity import ERR_FORMAT, QuantityError, canonical, check_quantity

# encode() returns ZERO for a value Go leaves out of JSON when it is zero: a zero Time (unset, as the Go
# zero time arrives on the wire) is left out, and printed as null by a field marked emit_zero (a Time value,
# such as ObjectMeta.creationTimestamp, rather than a *Time). Every other well-known value is printed whenever
# its field is present.
ZERO: Any = object()

_GO_ZERO_TIME = -62135596800  # 0001-01-01T00:00:00Z, Go's time.Time{}


@dataclass(frozen=True, slots=True)
class WellKnown:
    """decode: JSON value -> what the generated message's constructor takes for this field (a kwargs dict).
        It sees None only as an element of a list or map (a null field is skipped before), where it returns
        what Go makes of null there. Raises gojson.Invalid.
    encode: message -> JSON value, or ZERO (see above). Raises EncodeError.
    zero: the JSON printed for an absent field marked emit_zero."""

    decode: Callable[[Any], Any]
    encode: Callable[[Any], Any]
    zero: Callable[[], Any]


def _time_error(error: gotime.TimeError) -> Invalid:
    return Invalid(message=str(error), fatal=True)


def _decode_time(value: Any) -> Any:
    if value is None:
        return {}
    if type(value) is not str:  # Time.UnmarshalJSON first unmarshals into a Go string
        raise mismatch(value, "string", fatal=True)
    try:
        seconds, _ = gotime.parse(value, gotime.RFC3339)
    except gotime.TimeError as error:
        raise _time_error(error) from None
    return {"seconds": seconds, "nanos": 0}  # Go keeps whole seconds and writes nanos as 0


def _encode_time(msg: Any) -> Any:
    seconds = msg.seconds
    if seconds == _GO_ZERO_TIME or (seconds == 0 and not msg.HasField("seconds") and not msg.HasField("nanos")):
        return ZERO
    return gotime.format_seconds(seconds)


def _decode_micro_time(value: Any) -> Any:
    if value is None:
        return {}
    if type(value) is not str:
        raise mismatch(value, "string", fatal=True)
    try:
        seconds, nanos = gotime.parse(value, gotime.RFC3339_MICRO)
    except gotime.TimeError as error:
        raise _time_error(error) from None
    return {"seconds": seconds, "nanos": nanos}


def _encode_micro_time(msg: Any) -> Any:
    seconds, nanos = msg.seconds, msg.nanos
    if (seconds == _GO_ZERO_TIME and nanos == 0) or (
        seconds == 0 and not msg.HasField("seconds") and not msg.HasField("nanos")
    ):
        return ZERO
    return gotime.format_micro(seconds, nanos)


def _decode_duration(value: Any) -> Any:
    if value is not None and type(value) is not str:
        raise mismatch(value, "string", fatal=True)
    try:  # Go parses null as "" too, which fails
        return {"duration": gotime.parse_duration(value or "")}
    except gotime.TimeError as error:
        raise _time_error(error) from None


def _decode_int_or_string(value: Any) -> Any:
    # Go writes all three fields, whichever holds the value.
    if type(value) is str:
        return {"type": 1, "intVal": 0, "strVal": value}
    if value is None:
        return {"type": 0, "intVal": 0, "strVal": ""}
    if type(value) is int and -(1 << 31) <= value < 1 << 31:
        return {"type": 0, "intVal": value, "strVal": ""}
    if type(value) in (int, float):
        raise Invalid(kind=f"number {number_literal(value)}", go_type="int32", fatal=True)
    raise mismatch(value, "int32", fatal=True)


def _encode_int_or_string(msg: Any) -> Any:
    kind = msg.type
    if kind == 1:
        return msg.strVal
    if kind == 0:
        return msg.intVal
    raise EncodeError(f"impossible IntOrString.Type {kind}")


def _decode_quantity(value: Any) -> Any:
    if value is None:
        return {"string": "0"}
    if type(value) is str:
        text = value
    elif type(value) in (int, float):
        text = number_literal(value)  # Go parses the bare number's text
    else:
        text = json.dumps(value)  # true, {...}, [...]: Go parses the raw JSON text, which never matches
    try:
        return {"string": canonical(check_quantity(text))}
    except QuantityError as error:
        raise Invalid(message=str(error), fatal=True) from None


def _encode_quantity(msg: Any) -> Any:
    """Quantity.String(): a protobuf client's text is printed canonical too (kept as is if Go could not parse it)."""
    text = msg.string
    if type(text) is not str:  # bytes that are not UTF-8 (upb hands proto2 strings over as bytes): never a quantity
        raise EncodeError(ERR_FORMAT)
    if not text:
        return "0"
    try:
        return canonical(text)
    except QuantityError:
        return text


def _dump_json(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:  # integers beyond 64 bits; the stdlib writes them
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _embedded(field: str, *, text_if_not_json: bool = False) -> WellKnown:
    """FieldsV1 and RawExtension: JSON held as bytes in `field`; Go stores any non-null JSON verbatim.

    text_if_not_json: bytes that are not JSON (a protobuf client may send any) read as a JSON string,
    which is no valid FieldsV1: managedFields that cannot be read are replaced by the live object's, as
    kube-apiserver's field manager replaces them (decodeLiveOrNew). Otherwise they are an EncodeError."""

    def decode(value: Any) -> Any:
        return {} if value is None else {field: _dump_json(value)}

    def encode(msg: Any) -> Any:
        raw = getattr(msg, field)
        if not raw:
            return None  # Go's MarshalJSON writes null for nil Raw
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            if text_if_not_json:
                return bytes(raw).decode("utf-8", "replace")
            raise EncodeError(f"{msg.DESCRIPTOR.name}.{field} does not hold JSON") from None

    return WellKnown(decode, encode, lambda: None)


def _decode_value(value: Any) -> Any:
    kind = type(value)
    if kind is str:
        return {"string_value": value}
    if kind is bool:
        return {"bool_value": value}
    if kind is int or kind is float:
        return {"number_value": float(value)}
    if kind is list:
        return {"list_value": {"values": [_decode_value(item) for item in value]}}
    if kind is dict:  # protobuf's Struct takes a plain dict and converts every value itself
        return {"struct_value": value}
    return {"null_value": 0}


def _encode_value(msg: Any) -> Any:
    kind = msg.WhichOneof("kind")
    if kind == "string_value":
        return msg.string_value
    if kind == "number_value":
        number = msg.number_value
        if number != number or number in (float("inf"), float("-inf")):
            raise EncodeError(f"json: unsupported value: {number}")
        # Go prints float64 5 as 5, and Table cells that were int64 in Go come back as integers.
        return int(number) if number.is_integer() and abs(number) < 2**53 else number
    if kind == "bool_value":
        return msg.bool_value
    if kind == "struct_value":
        fields = msg.struct_value.fields
        return {key: _encode_value(fields[key]) for key in fields}
    if kind == "list_value":
        return [_encode_value(item) for item in msg.list_value.values]
    return None


def _decode_struct(value: Any) -> Any:
    if type(value) is not dict:
        raise mismatch(value, "map[string]interface {}")
    return value  # protobuf's Struct takes a plain dict and converts every value itself


def _decode_list_value(value: Any) -> Any:
    if type(value) is not list:
        raise mismatch(value, "[]interface {}")
    return {"values": [_decode_value(item) for item in value]}


def _string_list(go_type: str) -> Callable[[Any], Any]:
    """A Go named []string (metav1.Verbs, certificates' ExtraValue): a JSON list, a message of `items` on the
    wire."""

    def decode(value: Any) -> Any:
        if type(value) is not list:
            raise mismatch(value, go_type)
        for index, item in enumerate(value):
            if type(item) is not str:
                raise mismatch(item, "string").at(f"[{index}]")
        return {"items": value}

    return decode


_META = "k8s.io.apimachinery.pkg.apis.meta.v1."

WELL_KNOWN: dict[str, WellKnown] = {
    _META + "Time": WellKnown(_decode_time, _encode_time, lambda: None),
    _META + "MicroTime": WellKnown(_decode_micro_time, _encode_micro_time, lambda: None),
    _META + "Duration": WellKnown(_decode_duration, lambda m: gotime.format_duration(m.duration), lambda: "0s"),
    _META + "FieldsV1": _embedded("Raw", text_if_not_json=True),
    _META + "Verbs": WellKnown(_string_list("v1.Verbs"), lambda m: list(m.items), list),
    "k8s.io.api.certificates.v1.ExtraValue": WellKnown(_string_list("v1.ExtraValue"), lambda m: list(m.items), list),
    "k8s.io.apimachinery.pkg.runtime.RawExtension": _embedded("raw"),
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": WellKnown(
        _decode_int_or_string, _encode_int_or_string, lambda: 0
    ),
    "k8s.io.apimachinery.pkg.api.resource.Quantity": WellKnown(
        _decode_quantity, _encode_quantity, lambda: "0"
    ),
    "google.protobuf.Value": WellKnown(_decode_value, _encode_value, lambda: None),
    "google.protobuf.Struct": WellKnown(
        _decode_struct, lambda m: {k: _encode_value(m.fields[k]) for k in m.fields}, lambda: None
    ),
    "google.protobuf.ListValue": WellKnown(
        _decode_list_value, lambda m: [_encode_value(v) for v in m.values], lambda: None
    ),
    SCHEMA_MESSAGE: WellKnown(lambda v: decode_schema(v) if v is not None else {}, encode_schema, lambda: None),
}
