"""Per-message plans: everything the transcoder needs about a message type, worked out once.

A Plan is built the first time a message type is seen and cached for the life of the process. It
holds, per field, a ready-made decoder (server/machinery/codec/decoding.py) and encoder entry
(server/machinery/codec/encoding.py), so the hot loops never inspect a descriptor or read an option. Plans
being built are visible to their own fields, so recursive message types resolve, and a whole build
is published at once, so no thread sees a half-built plan.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from capstan.options.v1 import options_pb2
from server.machinery import schema_hints
from server.machinery.codec.decoding import field_decoder
from server.machinery.codec.encoding import INLINE, field_encoder
from server.machinery.codec.gojson import is_inline, map_value, message_type
from server.machinery.codec.planned import Plan
from server.machinery.codec.wellknown import WELL_KNOWN
from server.machinery.protofields import is_repeated

_EMIT_ZERO: Any = options_pb2.emit_zero  # typed as a plain FieldDescriptor by the generated stub
_TYPE_META: Any = options_pb2.type_meta
_PLANS: dict[Descriptor, Plan] = {}
_BUILDING: dict[Descriptor, Plan] = {}  # plans being filled, so recursive message types resolve
_LOCK = threading.RLock()


def plan_for(descriptor: Descriptor) -> Plan:
    """The cached plan of an object message type; TypeError for a well-known type (a JSON value)."""
    plan = _PLANS.get(descriptor)
    if plan is not None:
        return plan
    with _LOCK:
        plan = _PLANS.get(descriptor) or _BUILDING.get(descriptor)
        if plan is not None:
            return plan
        if descriptor.full_name in WELL_KNOWN:
            raise TypeError(f"{descriptor.full_name} is a JSON value, not an object")
        outermost = not _BUILDING
        plan = _BUILDING[descriptor] = Plan(descriptor)
        try:
            _fill(plan)
        except BaseException:
            if outermost:
                _BUILDING.clear()
            raise
        if outermost:  # publish every plan of this build at once: no thread ever sees a half-built plan
            _PLANS.update(_BUILDING)
            _BUILDING.clear()
        return plan


def _fill(plan: Plan) -> None:
    """Decoders and encoders of every field. An inline field's struct lends its decoders, its printed-when-absent
    fields and its names (in place, for the printing order) to this plan; this message's own fields win a clash."""
    always: list[tuple[str, Callable[[], Any]]] = []
    order: list[str] = []
    inline = []
    printed = _go_always_prints(plan.descriptor)
    for field in plan.descriptor.fields:
        name = field.name  # Capstan's Kubernetes protos use the JSON names as field names
        emit_zero = bool(field.GetOptions().Extensions[_EMIT_ZERO])
        if is_inline(field):
            sub = plan_for(message_type(field))
            inline.append((name, sub))
            plan.encoders[field] = (name, INLINE, emit_zero, sub)
            always.extend(sub.always)
            order.extend(sub.order)
            continue
        mode, aux, zero = field_encoder(field, _sub_plan)
        type_meta = bool(field.GetOptions().Extensions[_TYPE_META])
        plan.decoders[name] = field_decoder(field, name, _sub_plan, type_meta=type_meta)
        plan.encoders[field] = (name, mode, emit_zero, aux)
        if emit_zero and is_repeated(field) and map_value(field) is None and not _built_non_nil(plan.descriptor, field):
            zero = _null
        elif zero is None and name in printed and not is_repeated(field) and field.type != FieldDescriptor.TYPE_MESSAGE:
            zero = _scalar_zero(field)
        if emit_zero and zero is not None:
            always.append((name, zero))
        order.append(name)
    own = set(plan.decoders)
    for name, sub in inline:
        keys = frozenset(key for key in sub.decoders if key not in own)
        plan.decoders.update((key, sub.decoders[key]) for key in keys)
        plan.inline += ((name, keys, sub),)
    plan.always = tuple(always)
    plan.order = tuple(dict.fromkeys(order))
    numbers = [field.number for field in plan.descriptor.fields]
    plan.reorder = numbers != sorted(numbers)
    plan.type_meta = tuple(key for key in ("apiVersion", "kind") if key not in plan.decoders)


# Messages whose slices kube-apiserver builds itself, never nil: discovery documents, Tables, rules reviews.
_BUILT_PACKAGES = ("k8s.io.apimachinery.pkg.apis.meta.v1.", "k8s.io.api.authorization.v1.")


def _built_non_nil(message: Descriptor, field: FieldDescriptor) -> bool:
    """Whether an empty emit_zero list prints [] rather than null. A stored object's empty slice has come back
    from protobuf as Go's nil, which a field without omitempty prints as null ("rules": null); a list kind's
    items and the documents kube builds in Go are non-nil slices, printed [] when empty."""
    if message.name.endswith("List") and field.name == "items":
        return True
    return message.full_name.startswith(_BUILT_PACKAGES)


def _null() -> None:
    return None


def _go_always_prints(message: Descriptor) -> frozenset[str]:
    """The fields a Go value of this message prints even when zero: values (not pointers) without omitempty,
    required or +optional (server/machinery/schema_hints.py: MessageHint.required and ALWAYS_PRINTED)."""
    return frozenset(schema_hints.message_hint(message.full_name).required) | schema_hints.ALWAYS_PRINTED.get(
        message.full_name, frozenset())


_ZEROS: dict[int, Any] = {FieldDescriptor.TYPE_STRING: "", FieldDescriptor.TYPE_BOOL: False,
                          FieldDescriptor.TYPE_DOUBLE: 0, FieldDescriptor.TYPE_FLOAT: 0}


def _scalar_zero(field: FieldDescriptor) -> Callable[[], Any] | None:
    """What Go prints for a zero scalar value: "", false, 0 (a []byte prints null: not printed here)."""
    if field.type == FieldDescriptor.TYPE_BYTES:
        return None
    zero = _ZEROS.get(field.type, 0)
    return lambda: zero


def _sub_plan(field: FieldDescriptor) -> Plan | None:
    if field.type != FieldDescriptor.TYPE_MESSAGE or message_type(field).full_name in WELL_KNOWN:
        return None
    return plan_for(message_type(field))
