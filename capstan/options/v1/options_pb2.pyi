from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
EMIT_ZERO_FIELD_NUMBER: _ClassVar[int]
emit_zero: _descriptor.FieldDescriptor
JSON_INLINE_FIELD_NUMBER: _ClassVar[int]
json_inline: _descriptor.FieldDescriptor
TYPE_META_FIELD_NUMBER: _ClassVar[int]
type_meta: _descriptor.FieldDescriptor
