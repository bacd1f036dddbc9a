from capstan.api.meta.v1 import meta_pb2 as _meta_pb2
from capstan.options.v1 import options_pb2 as _options_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ValidatingWebhookConfiguration(_message.Message):
    __slots__ = ("metadata", "webhooks")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    WEBHOOKS_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_pb2.ObjectMeta
    webhooks: _containers.RepeatedCompositeFieldContainer[ValidatingWebhook]
    def __init__(self, metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., webhooks: _Optional[_Iterable[_Union[ValidatingWebhook, _Mapping]]] = ...) -> None: ...

class ValidatingWebhookConfigurationList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[ValidatingWebhookConfiguration]
    def __init__(self, metadata: _Optional[_Union[_meta_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[ValidatingWebhookConfiguration, _Mapping]]] = ...) -> None: ...

class MutatingWebhookConfiguration(_message.Message):
    __slots__ = ("metadata", "webhooks")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    WEBHOOKS_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_pb2.ObjectMeta
    webhooks: _containers.RepeatedCompositeFieldContainer[MutatingWebhook]
    def __init__(self, metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., webhooks: _Optional[_Iterable[_Union[MutatingWebhook, _Mapping]]] = ...) -> None: ...

class MutatingWebhookConfigurationList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[MutatingWebhookConfiguration]
    def __init__(self, metadata: _Optional[_Union[_meta_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[MutatingWebhookConfiguration, _Mapping]]] = ...) -> None: ...

class ValidatingWebhook(_message.Message):
    __slots__ = ("name", "clientConfig", "rules", "failurePolicy", "namespaceSelector", "sideEffects", "timeoutSeconds", "admissionReviewVersions", "matchPolicy", "objectSelector", "matchConditions")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CLIENTCONFIG_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    FAILUREPOLICY_FIELD_NUMBER: _ClassVar[int]
    NAMESPACESELECTOR_FIELD_NUMBER: _ClassVar[int]
    SIDEEFFECTS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTSECONDS_FIELD_NUMBER: _ClassVar[int]
    ADMISSIONREVIEWVERSIONS_FIELD_NUMBER: _ClassVar[int]
    MATCHPOLICY_FIELD_NUMBER: _ClassVar[int]
    OBJECTSELECTOR_FIELD_NUMBER: _ClassVar[int]
    MATCHCONDITIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    clientConfig: WebhookClientConfig
    rules: _containers.RepeatedCompositeFieldContainer[RuleWithOperations]
    failurePolicy: str
    namespaceSelector: _meta_pb2.LabelSelector
    sideEffects: str
    timeoutSeconds: int
    admissionReviewVersions: _containers.RepeatedScalarFieldContainer[str]
    matchPolicy: str
    objectSelector: _meta_pb2.LabelSelector
    matchConditions: _containers.RepeatedCompositeFieldContainer[MatchCondition]
    def __init__(self, name: _Optional[str] = ..., clientConfig: _Optional[_Union[WebhookClientConfig, _Mapping]] = ..., rules: _Optional[_Iterable[_Union[RuleWithOperations, _Mapping]]] = ..., failurePolicy: _Optional[str] = ..., namespaceSelector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., sideEffects: _Optional[str] = ..., timeoutSeconds: _Optional[int] = ..., admissionReviewVersions: _Optional[_Iterable[str]] = ..., matchPolicy: _Optional[str] = ..., objectSelector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., matchConditions: _Optional[_Iterable[_Union[MatchCondition, _Mapping]]] = ...) -> None: ...

class MutatingWebhook(_message.Message):
    __slots__ = ("name", "clientConfig", "rules", "failurePolicy", "namespaceSelector", "sideEffects", "timeoutSeconds", "admissionReviewVersions", "matchPolicy", "reinvocationPolicy", "objectSelector", "matchConditions")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CLIENTCONFIG_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    FAILUREPOLICY_FIELD_NUMBER: _ClassVar[int]
    NAMESPACESELECTOR_FIELD_NUMBER: _ClassVar[int]
    SIDEEFFECTS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTSECONDS_FIELD_NUMBER: _ClassVar[int]
    ADMISSIONREVIEWVERSIONS_FIELD_NUMBER: _ClassVar[int]
    MATCHPOLICY_FIELD_NUMBER: _ClassVar[int]
    REINVOCATIONPOLICY_FIELD_NUMBER: _ClassVar[int]
    OBJECTSELECTOR_FIELD_NUMBER: _ClassVar[int]
    MATCHCONDITIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    clientConfig: WebhookClientConfig
    rules: _containers.RepeatedCompositeFieldContainer[RuleWithOperations]
    failurePolicy: str
    namespaceSelector: _meta_pb2.LabelSelector
    sideEffects: str
    timeoutSeconds: int
    admissionReviewVersions: _containers.RepeatedScalarFieldContainer[str]
    matchPolicy: str
    reinvocationPolicy: str
    objectSelector: _meta_pb2.LabelSelector
    matchConditions: _containers.RepeatedCompositeFieldContainer[MatchCondition]
    def __init__(self, name: _Optional[str] = ..., clientConfig: _Optional[_Union[WebhookClientConfig, _Mapping]] = ..., rules: _Optional[_Iterable[_Union[RuleWithOperations, _Mapping]]] = ..., failurePolicy: _Optional[str] = ..., namespaceSelector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., sideEffects: _Optional[str] = ..., timeoutSeconds: _Optional[int] = ..., admissionReviewVersions: _Optional[_Iterable[str]] = ..., matchPolicy: _Optional[str] = ..., reinvocationPolicy: _Optional[str] = ..., objectSelector: _Optional[_Union[_meta_pb2.LabelSelector, _Mapping]] = ..., matchConditions: _Optional[_Iterable[_Union[MatchCondition, _Mapping]]] = ...) -> None: ...

class WebhookClientConfig(_message.Message):
    __slots__ = ("service", "caBundle", "url")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    CABUNDLE_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    service: ServiceReference
    caBundle: bytes
    url: str
    def __init__(self, service: _Optional[_Union[ServiceReference, _Mapping]] = ..., caBundle: _Optional[bytes] = ..., url: _Optional[str] = ...) -> None: ...

class ServiceReference(_message.Message):
    __slots__ = ("namespace", "name", "path", "port")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    path: str
    port: int
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., path: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class RuleWithOperations(_message.Message):
    __slots__ = ("operations", "rule")
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    operations: _containers.RepeatedScalarFieldContainer[str]
    rule: Rule
    def __init__(self, operations: _Optional[_Iterable[str]] = ..., rule: _Optional[_Union[Rule, _Mapping]] = ...) -> None: ...

class Rule(_message.Message):
    __slots__ = ("apiGroups", "apiVersions", "resources", "scope")
    APIGROUPS_FIELD_NUMBER: _ClassVar[int]
    APIVERSIONS_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    apiGroups: _containers.RepeatedScalarFieldContainer[str]
    apiVersions: _containers.RepeatedScalarFieldContainer[str]
    resources: _containers.RepeatedScalarFieldContainer[str]
    scope: str
    def __init__(self, apiGroups: _Optional[_Iterable[str]] = ..., apiVersions: _Optional[_Iterable[str]] = ..., resources: _Optional[_Iterable[str]] = ..., scope: _Optional[str] = ...) -> None: ...

class MatchCondition(_message.Message):
    __slots__ = ("name", "expression")
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    expression: str
    def __init__(self, name: _Optional[str] = ..., expression: _Optional[str] = ...) -> None: ...
