"""JSON -> protobuf: the field decoders a Plan holds, and the loop that runs them.

Every decoder turns one JSON value into what the generated message class's constructor takes (a
str, an int, a list, bytes, or a dict of kwargs for a sub-message), so a whole object becomes one
constructor call in C. Decoders check types the way Go's encoding/json does and raise
gojson.Invalid; decode_object, which knows the Go struct and the path, completes it into a
DecodeError (see State.fail). The contract is stated in server/machinery/codec/transcode.py.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import FieldDescriptor

from server.machinery.codec.gojson import (
    Invalid,
    decode_base64,
    go_field_type,
    go_value_type,
    map_value,
    message_type,
    mismatch,
    number_literal,
)
from server.machinery.codec.planned import Decoder, Plan, Resolve, State
from server.machinery.codec.wellknown import WELL_KNOWN, WellKnown
from server.machinery.protofields import is_repeated

TYPE_META = ("apiVersion", "kind")


def field_decoder(field: FieldDescriptor, name: str, resolve: Resolve, *, type_meta: bool = False) -> Decoder:
    """The decoder of field, whose JSON name is name; resolve gives the plans of its object types. type_meta:
    the field's objects embed TypeMeta (the type_meta option; a list of objects here)."""
    value_field = map_value(field)
    if value_field is not None:
        go_type = go_field_type(field)
        sub = resolve(value_field)
        if sub is not None:
            return _message_map(name, sub, go_type)
        return _value_map(_value_decoder(value_field), go_type, value_field.type == FieldDescriptor.TYPE_STRING)
    go_type = go_field_type(field)
    sub = resolve(field)
    if is_repeated(field):
        if sub is not None:
            return _message_list(name, sub, go_type, type_meta)
        return _value_list(_value_decoder(field), go_type, field.type == FieldDescriptor.TYPE_STRING)
    if sub is not None:
        return _message(name, sub, go_type)
    return _value_decoder(field)


def _value_decoder(field: FieldDescriptor) -> Decoder:
    """Decodes one non-object value of field: a scalar, or a well-known type's JSON form."""
    kind = field.type
    if kind == FieldDescriptor.TYPE_MESSAGE:
        return _known(WELL_KNOWN[message_type(field).full_name])
    go_type = go_value_type(field)
    if kind == FieldDescriptor.TYPE_STRING:
        return _typed((str,), "", go_type)
    if kind == FieldDescriptor.TYPE_BOOL:
        return _typed((bool,), False, go_type)
    if kind == FieldDescriptor.TYPE_BYTES:
        return _bytes
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return _typed((int, float), 0.0, go_type)
    if kind == FieldDescriptor.TYPE_ENUM:
        raise NotImplementedError(f"{field.full_name}: enum fields (Kubernetes types have none)")
    bits = 64 if go_type.endswith("64") else 32
    low, high = (0, (1 << bits) - 1) if go_type.startswith("u") else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return _integer(low, high, go_type)


def _typed(types: tuple[type, ...], zero: Any, go_type: str) -> Decoder:
    def decode(value: Any, state: State, path: str, go_path: str) -> Any:
        if type(value) in types:
            return value
        if value is None:
            return zero  # null as a list or map element: Go keeps the element's zero value
        raise mismatch(value, go_type)

    return decode


def _integer(low: int, high: int, go_type: str) -> Decoder:
    def decode(value: Any, state: State, path: str, go_path: str) -> Any:
        if type(value) is int and low <= value <= high:
            return value
        if type(value) in (int, float):  # out of range, or written with a fraction: Go quotes the number
            raise Invalid(kind=f"number {number_literal(value)}", go_type=go_type)
        if value is None:
            return 0
        raise mismatch(value, go_type)

    return decode


def _bytes(value: Any, state: State, path: str, go_path: str) -> Any:
    if type(value) is str:
        return decode_base64(value)
    if type(value) is list:  # Go also fills a []byte from an array of numbers
        for index, item in enumerate(value):
            if type(item) is not int or not 0 <= item <= 255:
                kind = f"number {number_literal(item)}" if type(item) in (int, float) else ""
                error = Invalid(kind=kind, go_type="uint8") if kind else mismatch(item, "uint8")
                raise error.at(f"[{index}]")
        return bytes(value)
    if value is None:
        return b""
    raise mismatch(value, "[]uint8")


def _known(known: WellKnown) -> Decoder:
    decode = known.decode

    def decode_known(value: Any, state: State, path: str, go_path: str) -> Any:
        return decode(value)

    return decode_known


def _message(name: str, sub: Plan, go_type: str) -> Decoder:
    def decode(value: Any, state: State, path: str, go_path: str) -> Any:
        if type(value) is not dict:
            raise mismatch(value, go_type)
        here, go_here = (f"{path}.{name}" if path else name), (f"{go_path}.{name}" if go_path else name)
        return decode_object(sub, value, state, here, go_here)

    return decode


def _message_list(name: str, sub: Plan, go_type: str, type_meta: bool) -> Decoder:
    element_type = go_type[2:]
    known = TYPE_META if type_meta else ()

    def decode(value: Any, state: State, path: str, go_path: str) -> Any:
        if type(value) is not list:
            raise mismatch(value, go_type)
        here, go_here = (f"{path}.{name}" if path else name), (f"{go_path}.{name}" if go_path else name)
        items = []
        for index, item in enumerate(value):
            if type(item) is dict:
                at = f"{here}[{index}]"
                for key in known:  # TypeMeta's fields, Go strings the message does not keep
                    if item.get(key) is not None and type(item[key]) is not str:
                        state.fail(mismatch(item[key], "string"), sub.go_name, key, at, go_here)
                items.append(decode_object(sub, item, state, at, go_here, known))
            elif item is None:
                items.append({})  # null element: Go appends a zero struct
            else:
                raise mismatch(item, element_type).at(f"[{index}]")
        return items

    return decode


def _message_map(name: str, sub: Plan, go_type: str) -> Decoder:
    element_type = go_type[len("map[string]") :]

    def decode(value: Any, state: State, path: str, go_path: str) -> Any:
        if type(value) is not dict:
            raise mismatch(value, go_type)
        here, go_here = (f"{path}.{name}" if path else name), (f"{go_path}.{name}" if go_path else name)
        entries = {}
        for key, item in value.items():
            if type(item) is dict:
                entries[key] = decode_object(sub, item, state, f"{here}.{key}", go_here)
            elif item is None:
                entries[key] = {}
            else:
                raise mismatch(item, element_type).at(f".{key}")
        return entries

    return decode


def _value_list(element: Decoder, go_type: str, strings: bool) -> Decoder:
    def decode(value: Any, state: State, path: str, go_path: str) -> Any:
        if type(value) is not list:
            raise mismatch(value, go_type)
        if strings:  # the common case, checked in one plain loop (faster than all()); the constructor copies it
            for item in value:
                if type(item) is not str:
                    break
            else:
                return value
        items = []
        for index, item in enumerate(value):
            try:
                items.append(element(item, state, path, go_path))
            except Invalid as error:
                raise error.at(f"[{index}]") from None
        return items

    return decode


def _value_map(element: Decoder, go_type: str, strings: bool) -> Decoder:
    def decode(value: Any, state: State, path: str, go_path: str) -> Any:
        if type(value) is not dict:
            raise mismatch(value, go_type)
        if strings:
            for item in value.values():
                if type(item) is not str:
                    break
            else:
                return value
        entries = {}
        for key, item in value.items():
            try:
                entries[key] = element(item, state, path, go_path)
            except Invalid as error:
                raise error.at(f".{key}") from None
        return entries

    return decode


def decode_object(
    plan: Plan, obj: dict[str, Any], state: State, path: str, go_path: str, known: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The constructor kwargs for plan's message from a JSON object found at path (Go field path go_path).

    The keys of inline fields' structs are read as this object's own, then nested (see nest).
    Unknown keys (other than those in known, which the caller handles) are recorded in state and dropped;
    null values leave their field unset; a bad value is completed into a DecodeError that is raised at once
    (fatal) or saved in state (see State.fail).
    """
    kwargs: dict[str, Any] = {}
    decoders = plan.decoders
    for key, value in obj.items():
        decoder = decoders.get(key)
        if decoder is None:
            if key not in known:
                state.unknown.append(f"{path}.{key}" if path else key)
        elif value is not None:
            try:
                kwargs[key] = decoder(value, state, path, go_path)
            except Invalid as error:
                state.fail(error, plan.go_name, key, path, go_path)
    if plan.inline:
        nest(plan, kwargs)
    return kwargs


def nest(plan: Plan, kwargs: dict[str, Any]) -> None:
    """Moves the values of inline fields' keys into their sub-message's kwargs. An inline field is always
    set, as Go's protobuf marshalling always writes an embedded (non-pointer) struct, empty or not."""
    for name, keys, sub in plan.inline:
        inner = {key: kwargs.pop(key) for key in [key for key in kwargs if key in keys]}
        if sub.inline:
            nest(sub, inner)
        kwargs[name] = inner
