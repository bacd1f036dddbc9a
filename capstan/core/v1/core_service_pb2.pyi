from capstan.api.meta.v1 import meta_pb2 as _meta_pb2
from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Encoding(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ENCODING_UNSPECIFIED: _ClassVar[Encoding]
    ENCODING_JSON: _ClassVar[Encoding]
    ENCODING_PROTOBUF: _ClassVar[Encoding]
    ENCODING_YAML: _ClassVar[Encoding]
    ENCODING_JSON_TEXT: _ClassVar[Encoding]

class View(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VIEW_UNSPECIFIED: _ClassVar[View]
    VIEW_TABLE: _ClassVar[View]
    VIEW_PARTIAL_OBJECT_METADATA: _ClassVar[View]
    VIEW_PARTIAL_OBJECT_METADATA_LIST: _ClassVar[View]

class PatchType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PATCH_TYPE_UNSPECIFIED: _ClassVar[PatchType]
    PATCH_TYPE_JSON: _ClassVar[PatchType]
    PATCH_TYPE_MERGE: _ClassVar[PatchType]
    PATCH_TYPE_STRATEGIC_MERGE: _ClassVar[PatchType]
    PATCH_TYPE_APPLY: _ClassVar[PatchType]
ENCODING_UNSPECIFIED: Encoding
ENCODING_JSON: Encoding
ENCODING_PROTOBUF: Encoding
ENCODING_YAML: Encoding
ENCODING_JSON_TEXT: Encoding
VIEW_UNSPECIFIED: View
VIEW_TABLE: View
VIEW_PARTIAL_OBJECT_METADATA: View
VIEW_PARTIAL_OBJECT_METADATA_LIST: View
PATCH_TYPE_UNSPECIFIED: PatchType
PATCH_TYPE_JSON: PatchType
PATCH_TYPE_MERGE: PatchType
PATCH_TYPE_STRATEGIC_MERGE: PatchType
PATCH_TYPE_APPLY: PatchType

class ResourcePath(_message.Message):
    __slots__ = ("group", "version", "resource", "namespace", "name", "subresource")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBRESOURCE_FIELD_NUMBER: _ClassVar[int]
    group: str
    version: str
    resource: str
    namespace: str
    name: str
    subresource: str
    def __init__(self, group: _Optional[str] = ..., version: _Optional[str] = ..., resource: _Optional[str] = ..., namespace: _Optional[str] = ..., name: _Optional[str] = ..., subresource: _Optional[str] = ...) -> None: ...

class RawObject(_message.Message):
    __slots__ = ("encoding", "data", "json")
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    encoding: Encoding
    data: bytes
    json: str
    def __init__(self, encoding: _Optional[_Union[Encoding, str]] = ..., data: _Optional[bytes] = ..., json: _Optional[str] = ...) -> None: ...

class ViewOptions(_message.Message):
    __slots__ = ("view", "api_version", "include_object")
    VIEW_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_OBJECT_FIELD_NUMBER: _ClassVar[int]
    view: View
    api_version: str
    include_object: str
    def __init__(self, view: _Optional[_Union[View, str]] = ..., api_version: _Optional[str] = ..., include_object: _Optional[str] = ...) -> None: ...

class CreateRequest(_message.Message):
    __slots__ = ("path", "object", "options", "accept", "view")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    path: ResourcePath
    object: RawObject
    options: _meta_pb2.CreateOptions
    accept: Encoding
    view: ViewOptions
    def __init__(self, path: _Optional[_Union[ResourcePath, _Mapping]] = ..., object: _Optional[_Union[RawObject, _Mapping]] = ..., options: _Optional[_Union[_meta_pb2.CreateOptions, _Mapping]] = ..., accept: _Optional[_Union[Encoding, str]] = ..., view: _Optional[_Union[ViewOptions, _Mapping]] = ...) -> None: ...

class CreateResponse(_message.Message):
    __slots__ = ("object", "warnings")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    object: RawObject
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, object: _Optional[_Union[RawObject, _Mapping]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ("path", "options", "accept", "view", "query", "connect_verb")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    CONNECT_VERB_FIELD_NUMBER: _ClassVar[int]
    path: ResourcePath
    options: _meta_pb2.GetOptions
    accept: Encoding
    view: ViewOptions
    query: bytes
    connect_verb: str
    def __init__(self, path: _Optional[_Union[ResourcePath, _Mapping]] = ..., options: _Optional[_Union[_meta_pb2.GetOptions, _Mapping]] = ..., accept: _Optional[_Union[Encoding, str]] = ..., view: _Optional[_Union[ViewOptions, _Mapping]] = ..., query: _Optional[bytes] = ..., connect_verb: _Optional[str] = ...) -> None: ...

class GetResponse(_message.Message):
    __slots__ = ("object",)
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    object: RawObject
    def __init__(self, object: _Optional[_Union[RawObject, _Mapping]] = ...) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ("path", "options", "accept", "view", "max_response_bytes", "omit_remaining_item_count", "join_items")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    MAX_RESPONSE_BYTES_FIELD_NUMBER: _ClassVar[int]
    OMIT_REMAINING_ITEM_COUNT_FIELD_NUMBER: _ClassVar[int]
    JOIN_ITEMS_FIELD_NUMBER: _ClassVar[int]
    path: ResourcePath
    options: _meta_pb2.ListOptions
    accept: Encoding
    view: ViewOptions
    max_response_bytes: int
    omit_remaining_item_count: bool
    join_items: bool
    def __init__(self, path: _Optional[_Union[ResourcePath, _Mapping]] = ..., options: _Optional[_Union[_meta_pb2.ListOptions, _Mapping]] = ..., accept: _Optional[_Union[Encoding, str]] = ..., view: _Optional[_Union[ViewOptions, _Mapping]] = ..., max_response_bytes: _Optional[int] = ..., omit_remaining_item_count: bool = ..., join_items: bool = ...) -> None: ...

class ListResponse(_message.Message):
    __slots__ = ("metadata", "encoding", "items", "kind", "api_version", "converted", "json_items", "items_joined")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    API_VERSION_FIELD_NUMBER: _ClassVar[int]
    CONVERTED_FIELD_NUMBER: _ClassVar[int]
    JSON_ITEMS_FIELD_NUMBER: _ClassVar[int]
    ITEMS_JOINED_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_pb2.ListMeta
    encoding: Encoding
    items: _containers.RepeatedScalarFieldContainer[bytes]
    kind: str
    api_version: str
    converted: RawObject
    json_items: _containers.RepeatedScalarFieldContainer[str]
    items_joined: bool
    def __init__(self, metadata: _Optional[_Union[_meta_pb2.ListMeta, _Mapping]] = ..., encoding: _Optional[_Union[Encoding, str]] = ..., items: _Optional[_Iterable[bytes]] = ..., kind: _Optional[str] = ..., api_version: _Optional[str] = ..., converted: _Optional[_Union[RawObject, _Mapping]] = ..., json_items: _Optional[_Iterable[str]] = ..., items_joined: bool = ...) -> None: ...

class UpdateRequest(_message.Message):
    __slots__ = ("path", "object", "options", "accept", "view")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    path: ResourcePath
    object: RawObject
    options: _meta_pb2.UpdateOptions
    accept: Encoding
    view: ViewOptions
    def __init__(self, path: _Optional[_Union[ResourcePath, _Mapping]] = ..., object: _Optional[_Union[RawObject, _Mapping]] = ..., options: _Optional[_Union[_meta_pb2.UpdateOptions, _Mapping]] = ..., accept: _Optional[_Union[Encoding, str]] = ..., view: _Optional[_Union[ViewOptions, _Mapping]] = ...) -> None: ...

class UpdateResponse(_message.Message):
    __slots__ = ("object", "warnings", "created")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    object: RawObject
    warnings: _containers.RepeatedScalarFieldContainer[str]
    created: bool
    def __init__(self, object: _Optional[_Union[RawObject, _Mapping]] = ..., warnings: _Optional[_Iterable[str]] = ..., created: bool = ...) -> None: ...

class PatchRequest(_message.Message):
    __slots__ = ("path", "type", "patch", "options", "accept", "patch_text", "view")
    PATH_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PATCH_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_FIELD_NUMBER: _ClassVar[int]
    PATCH_TEXT_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    path: ResourcePath
    type: PatchType
    patch: bytes
    options: _meta_pb2.PatchOptions
    accept: Encoding
    patch_text: str
    view: ViewOptions
    def __init__(self, path: _Optional[_Union[ResourcePath, _Mapping]] = ..., type: _Optional[_Union[PatchType, str]] = ..., patch: _Optional[bytes] = ..., options: _Optional[_Union[_meta_pb2.PatchOptions, _Mapping]] = ..., accept: _Optional[_Union[Encoding, str]] = ..., patch_text: _Optional[str] = ..., view: _Optional[_Union[ViewOptions, _Mapping]] = ...) -> None: ...

class PatchResponse(_message.Message):
    __slots__ = ("object", "warnings", "created")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    object: RawObject
    warnings: _containers.RepeatedScalarFieldContainer[str]
    created: bool
    def __init__(self, object: _Optional[_Union[RawObject, _Mapping]] = ..., warnings: _Optional[_Iterable[str]] = ..., created: bool = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("path", "options", "accept", "view")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    path: ResourcePath
    options: _meta_pb2.DeleteOptions
    accept: Encoding
    view: ViewOptions
    def __init__(self, path: _Optional[_Union[ResourcePath, _Mapping]] = ..., options: _Optional[_Union[_meta_pb2.DeleteOptions, _Mapping]] = ..., accept: _Optional[_Union[Encoding, str]] = ..., view: _Optional[_Union[ViewOptions, _Mapping]] = ...) -> None: ...

class DeleteResponse(_message.Message):
    __slots__ = ("object", "status")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    object: RawObject
    status: _meta_pb2.Status
    def __init__(self, object: _Optional[_Union[RawObject, _Mapping]] = ..., status: _Optional[_Union[_meta_pb2.Status, _Mapping]] = ...) -> None: ...

class DeleteCollectionRequest(_message.Message):
    __slots__ = ("path", "list_options", "delete_options", "accept", "view")
    PATH_FIELD_NUMBER: _ClassVar[int]
    LIST_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    DELETE_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    path: ResourcePath
    list_options: _meta_pb2.ListOptions
    delete_options: _meta_pb2.DeleteOptions
    accept: Encoding
    view: ViewOptions
    def __init__(self, path: _Optional[_Union[ResourcePath, _Mapping]] = ..., list_options: _Optional[_Union[_meta_pb2.ListOptions, _Mapping]] = ..., delete_options: _Optional[_Union[_meta_pb2.DeleteOptions, _Mapping]] = ..., accept: _Optional[_Union[Encoding, str]] = ..., view: _Optional[_Union[ViewOptions, _Mapping]] = ...) -> None: ...

class DeleteCollectionResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: ListResponse
    def __init__(self, deleted: _Optional[_Union[ListResponse, _Mapping]] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("path", "options", "accept", "view")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    path: ResourcePath
    options: _meta_pb2.ListOptions
    accept: Encoding
    view: ViewOptions
    def __init__(self, path: _Optional[_Union[ResourcePath, _Mapping]] = ..., options: _Optional[_Union[_meta_pb2.ListOptions, _Mapping]] = ..., accept: _Optional[_Union[Encoding, str]] = ..., view: _Optional[_Union[ViewOptions, _Mapping]] = ...) -> None: ...

class WatchEvent(_message.Message):
    __slots__ = ("type", "object")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    type: str
    object: RawObject
    def __init__(self, type: _Optional[str] = ..., object: _Optional[_Union[RawObject, _Mapping]] = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[WatchEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[WatchEvent, _Mapping]]] = ...) -> None: ...

class DiscoverRequest(_message.Message):
    __slots__ = ("known_generation",)
    KNOWN_GENERATION_FIELD_NUMBER: _ClassVar[int]
    known_generation: int
    def __init__(self, known_generation: _Optional[int] = ...) -> None: ...

class DiscoverResponse(_message.Message):
    __slots__ = ("resources", "generation", "unchanged", "aggregated")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    AGGREGATED_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[Resource]
    generation: int
    unchanged: bool
    aggregated: _containers.RepeatedCompositeFieldContainer[AggregatedVersion]
    def __init__(self, resources: _Optional[_Iterable[_Union[Resource, _Mapping]]] = ..., generation: _Optional[int] = ..., unchanged: bool = ..., aggregated: _Optional[_Iterable[_Union[AggregatedVersion, _Mapping]]] = ...) -> None: ...

class AggregatedVersion(_message.Message):
    __slots__ = ("group", "version", "group_priority_minimum", "version_priority", "available", "resources", "openapi_v3")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    GROUP_PRIORITY_MINIMUM_FIELD_NUMBER: _ClassVar[int]
    VERSION_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    OPENAPI_V3_FIELD_NUMBER: _ClassVar[int]
    group: str
    version: str
    group_priority_minimum: int
    version_priority: int
    available: bool
    resources: bytes
    openapi_v3: bytes
    def __init__(self, group: _Optional[str] = ..., version: _Optional[str] = ..., group_priority_minimum: _Optional[int] = ..., version_priority: _Optional[int] = ..., available: bool = ..., resources: _Optional[bytes] = ..., openapi_v3: _Optional[bytes] = ...) -> None: ...

class Resource(_message.Message):
    __slots__ = ("group", "version", "resource", "kind", "singular", "list_kind", "namespaced", "verbs", "short_names", "categories", "subresources", "proto_message", "selectable_fields", "columns", "json_schema", "deprecation_warning", "no_table", "storage_version_hash", "group_priority", "returns_deleted_object")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SINGULAR_FIELD_NUMBER: _ClassVar[int]
    LIST_KIND_FIELD_NUMBER: _ClassVar[int]
    NAMESPACED_FIELD_NUMBER: _ClassVar[int]
    VERBS_FIELD_NUMBER: _ClassVar[int]
    SHORT_NAMES_FIELD_NUMBER: _ClassVar[int]
    CATEGORIES_FIELD_NUMBER: _ClassVar[int]
    SUBRESOURCES_FIELD_NUMBER: _ClassVar[int]
    PROTO_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SELECTABLE_FIELDS_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    DEPRECATION_WARNING_FIELD_NUMBER: _ClassVar[int]
    NO_TABLE_FIELD_NUMBER: _ClassVar[int]
    STORAGE_VERSION_HASH_FIELD_NUMBER: _ClassVar[int]
    GROUP_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    RETURNS_DELETED_OBJECT_FIELD_NUMBER: _ClassVar[int]
    group: str
    version: str
    resource: str
    kind: str
    singular: str
    list_kind: str
    namespaced: bool
    verbs: _containers.RepeatedScalarFieldContainer[str]
    short_names: _containers.RepeatedScalarFieldContainer[str]
    categories: _containers.RepeatedScalarFieldContainer[str]
    subresources: _containers.RepeatedCompositeFieldContainer[Subresource]
    proto_message: str
    selectable_fields: _containers.RepeatedScalarFieldContainer[str]
    columns: _containers.RepeatedCompositeFieldContainer[_meta_pb2.TableColumnDefinition]
    json_schema: bytes
    deprecation_warning: str
    no_table: bool
    storage_version_hash: str
    group_priority: int
    returns_deleted_object: bool
    def __init__(self, group: _Optional[str] = ..., version: _Optional[str] = ..., resource: _Optional[str] = ..., kind: _Optional[str] = ..., singular: _Optional[str] = ..., list_kind: _Optional[str] = ..., namespaced: bool = ..., verbs: _Optional[_Iterable[str]] = ..., short_names: _Optional[_Iterable[str]] = ..., categories: _Optional[_Iterable[str]] = ..., subresources: _Optional[_Iterable[_Union[Subresource, _Mapping]]] = ..., proto_message: _Optional[str] = ..., selectable_fields: _Optional[_Iterable[str]] = ..., columns: _Optional[_Iterable[_Union[_meta_pb2.TableColumnDefinition, _Mapping]]] = ..., json_schema: _Optional[bytes] = ..., deprecation_warning: _Optional[str] = ..., no_table: bool = ..., storage_version_hash: _Optional[str] = ..., group_priority: _Optional[int] = ..., returns_deleted_object: bool = ...) -> None: ...

class Subresource(_message.Message):
    __slots__ = ("name", "kind", "verbs", "group", "version", "proto_message")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    VERBS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PROTO_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    verbs: _containers.RepeatedScalarFieldContainer[str]
    group: str
    version: str
    proto_message: str
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., verbs: _Optional[_Iterable[str]] = ..., group: _Optional[str] = ..., version: _Optional[str] = ..., proto_message: _Optional[str] = ...) -> None: ...

class RegisterDescriptorsRequest(_message.Message):
    __slots__ = ("descriptors",)
    DESCRIPTORS_FIELD_NUMBER: _ClassVar[int]
    descriptors: _descriptor_pb2.FileDescriptorSet
    def __init__(self, descriptors: _Optional[_Union[_descriptor_pb2.FileDescriptorSet, _Mapping]] = ...) -> None: ...

class RegisterDescriptorsResponse(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, messages: _Optional[_Iterable[str]] = ...) -> None: ...

class AccessRequest(_message.Message):
    __slots__ = ("verb", "path")
    VERB_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    verb: str
    path: str
    def __init__(self, verb: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class AccessResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ProxyRequest(_message.Message):
    __slots__ = ("verb", "path", "url_path")
    VERB_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    URL_PATH_FIELD_NUMBER: _ClassVar[int]
    verb: str
    path: ResourcePath
    url_path: str
    def __init__(self, verb: _Optional[str] = ..., path: _Optional[_Union[ResourcePath, _Mapping]] = ..., url_path: _Optional[str] = ...) -> None: ...

class ProxyResponse(_message.Message):
    __slots__ = ("user", "groups", "extra", "host", "port", "server_name", "ca_bundle", "insecure_skip_tls_verify")
    USER_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    SERVER_NAME_FIELD_NUMBER: _ClassVar[int]
    CA_BUNDLE_FIELD_NUMBER: _ClassVar[int]
    INSECURE_SKIP_TLS_VERIFY_FIELD_NUMBER: _ClassVar[int]
    user: str
    groups: _containers.RepeatedScalarFieldContainer[str]
    extra: _containers.RepeatedCompositeFieldContainer[UserExtra]
    host: str
    port: int
    server_name: str
    ca_bundle: bytes
    insecure_skip_tls_verify: bool
    def __init__(self, user: _Optional[str] = ..., groups: _Optional[_Iterable[str]] = ..., extra: _Optional[_Iterable[_Union[UserExtra, _Mapping]]] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., server_name: _Optional[str] = ..., ca_bundle: _Optional[bytes] = ..., insecure_skip_tls_verify: bool = ...) -> None: ...

class UserExtra(_message.Message):
    __slots__ = ("key", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class MetricsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MetricsResponse(_message.Message):
    __slots__ = ("content_type", "data")
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    content_type: str
    data: bytes
    def __init__(self, content_type: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class IssuerDocumentRequest(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class IssuerDocumentResponse(_message.Message):
    __slots__ = ("content_type", "data")
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    content_type: str
    data: bytes
    def __init__(self, content_type: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...
