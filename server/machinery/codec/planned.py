"""The plan of one message type, the data both loops run on (decoding.py: JSON -> protobuf; encoding.py:
protobuf -> JSON), and the decode state its decoders share; plan.py builds and caches plans.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from server.machinery.codec.errors import DecodeError
from server.machinery.codec.gojson import Invalid, type_error_message


class State:
    """One decode call's findings: unknown field paths (in document order) and the first saved error."""

    __slots__ = ("saved", "unknown")

    def __init__(self) -> None:
        self.unknown: list[str] = []
        self.saved: DecodeError | None = None

    def fail(self, error: Invalid, struct: str, key: str, path: str, go_path: str) -> None:
        """Completes error found at field `key` of a Go `struct` object at path; raises it at once when fatal."""
        where = (f"{path}.{key}" if path else key) + error.suffix
        field = f"{go_path}.{key}" if go_path else key
        failure = DecodeError(error.message or type_error_message(error.kind, error.go_type, struct, field), path=where)
        if error.fatal:
            raise failure
        if self.saved is None:
            self.saved = failure


# A decoder: (JSON value, state, path and Go field path of the object that holds the value) -> constructor value.
# It raises gojson.Invalid for a value it cannot take; the loop owning the field completes that error.
Decoder = Callable[[Any, State, str, str], Any]

# The plan of a field's object type, or None for a scalar or well-known field.
Resolve = Callable[[FieldDescriptor], "Plan | None"]


class Plan:
    """One message type, ready for both loops: decoders by JSON name, encoders by field descriptor."""

    __slots__ = ("always", "decoders", "descriptor", "encoders", "go_name", "inline", "message_class", "order",
                 "reorder", "type_meta")

    def __init__(self, descriptor: Descriptor) -> None:
        self.descriptor = descriptor
        self.message_class: type[Message] = message_factory.GetMessageClass(descriptor)
        self.go_name = descriptor.name  # the Go struct, as decode errors name it
        self.decoders: dict[str, Decoder] = {}  # JSON name -> decoder
        self.encoders: dict[FieldDescriptor, tuple[str, int, bool, Any]] = {}  # (name, mode, emit_zero, aux)
        self.always: tuple[tuple[str, Callable[[], Any]], ...] = ()  # emit_zero fields printed when absent
        self.order: tuple[str, ...] = ()  # JSON names in Go's struct order (the protos declare fields in it)
        # Go's order is not field-number order (Container: terminationMessagePolicy = 20 comes before
        # imagePullPolicy = 14), so printed objects are put in `order` (ListFields goes by number).
        self.reorder = False
        self.type_meta: tuple[str, ...] = ()  # "apiVersion", "kind" unless the message has such fields
        # Inline fields (json_inline): (field name, the JSON keys that belong to it, its plan). Their struct's
        # decoders sit in `decoders` beside this message's own; decoding regroups the values (decoding.nest).
        self.inline: tuple[tuple[str, frozenset[str], Plan], ...] = ()
