"""Field descriptor questions asked the same way on every protobuf runtime Capstan supports (5.27 to 7.x).

protobuf 7 answers "is this field repeated?" only through `FieldDescriptor.is_repeated`; protobuf 5 only
through `label`. Which one this runtime has is decided once, at import, from a descriptor every runtime ships.
"""

from __future__ import annotations

from collections.abc import Callable

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FieldDescriptor

_PROBE = descriptor_pb2.FileDescriptorProto.DESCRIPTOR.fields_by_name["dependency"]  # a repeated string


def _by_property(field: FieldDescriptor) -> bool:
    return bool(field.is_repeated)


def _by_label(field: FieldDescriptor) -> bool:
    return bool(getattr(field, "label") == FieldDescriptor.LABEL_REPEATED)  # noqa: B009 (absent from 7's stubs)


is_repeated: Callable[[FieldDescriptor], bool] = _by_property if hasattr(_PROBE, "is_repeated") else _by_label
