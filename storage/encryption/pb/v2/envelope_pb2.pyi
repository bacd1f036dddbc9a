from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EncryptedDEKSourceType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AES_GCM_KEY: _ClassVar[EncryptedDEKSourceType]
    HKDF_SHA256_XNONCE_AES_GCM_SEED: _ClassVar[EncryptedDEKSourceType]
AES_GCM_KEY: EncryptedDEKSourceType
HKDF_SHA256_XNONCE_AES_GCM_SEED: EncryptedDEKSourceType

class EncryptedObject(_message.Message):
    __slots__ = ("encryptedData", "keyID", "encryptedDEKSource", "annotations", "encryptedDEKSourceType")
    class AnnotationsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    ENCRYPTEDDATA_FIELD_NUMBER: _ClassVar[int]
    KEYID_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTEDDEKSOURCE_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTEDDEKSOURCETYPE_FIELD_NUMBER: _ClassVar[int]
    encryptedData: bytes
    keyID: str
    encryptedDEKSource: bytes
    annotations: _containers.ScalarMap[str, bytes]
    encryptedDEKSourceType: EncryptedDEKSourceType
    def __init__(self, encryptedData: _Optional[bytes] = ..., keyID: _Optional[str] = ..., encryptedDEKSource: _Optional[bytes] = ..., annotations: _Optional[_Mapping[str, bytes]] = ..., encryptedDEKSourceType: _Optional[_Union[EncryptedDEKSourceType, str]] = ...) -> None: ...
