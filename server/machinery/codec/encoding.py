"""Protobuf -> JSON: the field encoders a Plan holds, and the loop that runs them.

encode_object walks only the fields a message has set (one ListFields() call) and prints them as
Go's encoding/json prints the Kubernetes types: map keys sorted, omitempty for zero scalars, base64 for bytes,
integers as numbers, well-known types in their JSON form, and the fields marked emit_zero (Go
pointers and fields without omitempty) even when zero. An inline field (json_inline, Go's embedded
`json:",inline"` struct) prints its struct's fields into the enclosing object. The contract is stated in
server/machinery/codec/transcode.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from server.machinery.codec.gojson import encode_base64, map_value, message_type
from server.machinery.codec.planned import Plan, Resolve
from server.machinery.codec.wellknown import WELL_KNOWN, ZERO
from server.machinery.protofields import is_repeated

# Encoder modes: one branch each in encode_object. INLINE prints a sub-message's fields into the enclosing object.
SCALAR, MESSAGE, MAP, LIST, KNOWN, LIST_MESSAGE, MAP_MESSAGE, CONVERT, INLINE = range(9)


def field_encoder(field: FieldDescriptor, resolve: Resolve) -> tuple[int, Any, Callable[[], Any] | None]:
    """(mode, aux, zero) for field: aux is a sub-plan, a WellKnown or a converter; zero renders an absent
    emit_zero field (None for scalars, which an absent field never prints)."""
    value_field = map_value(field)
    if value_field is not None:
        mode, aux = _value_encoder(value_field, resolve, element=True)
        if mode == SCALAR:
            return MAP, None, dict
        if mode == MESSAGE:
            return MAP_MESSAGE, aux, dict
        convert = aux
        return CONVERT, lambda values: {key: convert(values[key]) for key in sorted(values)}, dict
    repeated = is_repeated(field)
    mode, aux = _value_encoder(field, resolve, element=repeated)
    if repeated:
        if mode == SCALAR:
            return LIST, None, list
        if mode == MESSAGE:
            return LIST_MESSAGE, aux, list
        convert = aux
        return CONVERT, lambda values: [convert(item) for item in values], list
    if mode == MESSAGE:
        sub: Plan = aux
        return MESSAGE, sub, lambda: encode_object(sub, sub.message_class(), {})
    if mode == KNOWN:
        return KNOWN, aux, aux.zero
    return mode, aux, None


def _value_encoder(field: FieldDescriptor, resolve: Resolve, *, element: bool) -> tuple[int, Any]:
    """How one value of field encodes: (SCALAR, None), (MESSAGE, plan), (KNOWN, WellKnown) for a singular
    field, or (CONVERT, value -> JSON) for bytes, floats, and well-known values that are list or map elements."""
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        sub = resolve(field)
        if sub is not None:
            return MESSAGE, sub
        known = WELL_KNOWN[message_type(field).full_name]
        if not element:
            return KNOWN, known
        encode, zero = known.encode, known.zero
        return CONVERT, lambda item: zero() if (rendered := encode(item)) is ZERO else rendered
    if field.type == FieldDescriptor.TYPE_BYTES:
        return CONVERT, encode_base64
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return CONVERT, _go_float
    return SCALAR, None


def _go_float(value: float) -> Any:
    """Go prints a float64 with no fraction as an integer (1, not 1.0)."""
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def encode_object(plan: Plan, msg: Message, out: dict[str, Any]) -> dict[str, Any]:
    """Adds msg's fields to out as Go's encoding/json prints them, and returns out (or a reordered copy).

    Set fields come from ListFields(): a zero scalar is left out unless marked emit_zero, every present
    sub-message is printed, and a zero Time is left out unless emit_zero prints it as null.
    Absent emit_zero lists, maps and messages are printed as null (or [], see plan._built_non_nil), {} and their
    zero rendering.
    """
    encoders = plan.encoders
    for field, value in msg.ListFields():
        name, mode, emit_zero, aux = encoders[field]
        if mode == SCALAR:
            if value or emit_zero:
                out[name] = value
        elif mode == MESSAGE:
            out[name] = encode_object(aux, value, {})
        elif mode == MAP:
            out[name] = {key: value[key] for key in sorted(value)}  # Go's encoding/json sorts map keys
        elif mode == LIST:
            out[name] = list(value)
        elif mode == KNOWN:
            rendered = aux.encode(value)
            if rendered is not ZERO:
                out[name] = rendered
            elif emit_zero:
                out[name] = aux.zero()
        elif mode == LIST_MESSAGE:
            out[name] = [encode_object(aux, item, {}) for item in value]
        elif mode == MAP_MESSAGE:
            out[name] = {key: encode_object(aux, value[key], {}) for key in sorted(value)}
        elif mode == INLINE:
            out = encode_object(aux, value, out)
        elif value or emit_zero:
            out[name] = aux(value)
    added = plan.reorder  # declaration order differs from field numbers: reorder as Go prints
    for name, zero in plan.always:
        if name not in out:
            out[name] = zero()
            added = True
    if added:  # put the fields in declaration order; keys the caller put first (kind, apiVersion) stay
        names = set(plan.order)
        first = {key: value for key, value in out.items() if key not in names}
        out = first | {name: out[name] for name in plan.order if name in out}
    return out
