"""Facts about the Kubernetes Go types that their protobuf messages cannot carry: which fields are
required, how lists merge, which structs are atomic.

Kubernetes writes these as Go markers (`+listType=map`, `+patchStrategy=merge`, `json:"uid"` without
omitempty) and publishes them in its OpenAPI documents as `required`, `x-kubernetes-list-type`,
`x-kubernetes-list-map-keys`, `x-kubernetes-patch-strategy`, `x-kubernetes-patch-merge-key` and
`x-kubernetes-map-type`. One table serves every reader: the gateway's OpenAPI documents print it, and
strategic merge patch and server-side apply merge lists by it.

Keys are protobuf message full names and JSON field names (equal to the proto field names here). Every
entry was checked against kube-apiserver's published OpenAPI v3 document for api/v1
(kubernetes/kubernetes api/openapi-spec/v3/api__v1_openapi.json). A message or field missing here has
no such marker upstream: a list without a list type, a struct without a map type, nothing required.

Example: ObjectMeta.ownerReferences is a list keyed by uid, so a strategic merge patch of
    {"metadata": {"ownerReferences": [{"uid": "b", ...}]}}
against [{"uid": "a"}] yields [{"uid": "a"}, {"uid": "b"}] rather than replacing the list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class FieldHint:
    """How a field merges.

    list_type: "atomic" (replaced whole), "set" (scalars, merged by value) or "map" (objects, merged by
        list_map_keys); "" when Kubernetes declares none.
    patch_strategy: strategic merge patch's strategy for the field, e.g. "merge" or "retainKeys".
    patch_merge_key: the element field a "merge" list of objects is matched by; "" for lists of scalars.
    """

    list_type: str = ""
    list_map_keys: tuple[str, ...] = ()
    patch_strategy: str = ""
    patch_merge_key: str = ""


@dataclass(frozen=True, slots=True)
class MessageHint:
    """required: fields Go always serializes (no omitempty, not +optional), in Go struct order.
    map_type: "atomic" when the struct is replaced whole rather than merged field by field."""

    required: tuple[str, ...] = ()
    map_type: str = ""


CORE_V1 = "k8s.io.api.core.v1."
META_V1 = "k8s.io.apimachinery.pkg.apis.meta.v1."

ATOMIC = FieldHint(list_type="atomic")

FIELDS: Mapping[tuple[str, str], FieldHint] = MappingProxyType({
    (META_V1 + "ObjectMeta", "finalizers"): FieldHint(list_type="set", patch_strategy="merge"),
    (META_V1 + "ObjectMeta", "ownerReferences"): FieldHint(
        list_type="map", list_map_keys=("uid",), patch_strategy="merge", patch_merge_key="uid"),
    (META_V1 + "ObjectMeta", "managedFields"): ATOMIC,
    (META_V1 + "Status", "details"): ATOMIC,  # upstream marks the (struct) field so; printed as it is
    (META_V1 + "StatusDetails", "causes"): ATOMIC,
    (META_V1 + "DeleteOptions", "dryRun"): ATOMIC,
    (META_V1 + "APIResourceList", "resources"): ATOMIC,
    (META_V1 + "APIResource", "categories"): ATOMIC,
    (META_V1 + "APIResource", "shortNames"): ATOMIC,
    (META_V1 + "LabelSelector", "matchExpressions"): ATOMIC,
    (META_V1 + "LabelSelectorRequirement", "values"): ATOMIC,
    (CORE_V1 + "NamespaceSpec", "finalizers"): ATOMIC,
    (CORE_V1 + "NamespaceStatus", "conditions"): FieldHint(
        list_type="map", list_map_keys=("type",), patch_strategy="merge", patch_merge_key="type"),
})

MESSAGES: Mapping[str, MessageHint] = MappingProxyType({
    META_V1 + "OwnerReference": MessageHint(required=("apiVersion", "kind", "name", "uid"), map_type="atomic"),
    META_V1 + "WatchEvent": MessageHint(required=("type", "object")),
    META_V1 + "APIResourceList": MessageHint(required=("groupVersion", "resources")),
    META_V1 + "APIResource": MessageHint(required=("name", "singularName", "namespaced", "kind", "verbs")),
    META_V1 + "LabelSelector": MessageHint(map_type="atomic"),
    META_V1 + "LabelSelectorRequirement": MessageHint(required=("key", "operator")),
    META_V1 + "Condition": MessageHint(required=("type", "status", "lastTransitionTime", "reason", "message")),
    CORE_V1 + "NamespaceCondition": MessageHint(required=("type", "status")),
    CORE_V1 + "NamespaceList": MessageHint(required=("items",)),
    CORE_V1 + "ConfigMapList": MessageHint(required=("items",)),
    CORE_V1 + "SecretList": MessageHint(required=("items",)),
})

NO_FIELD_HINT = FieldHint()
NO_MESSAGE_HINT = MessageHint()


def field_hint(message: str, field: str) -> FieldHint:
    return FIELDS.get((message, field), NO_FIELD_HINT)


def message_hint(message: str) -> MessageHint:
    return MESSAGES.get(message, NO_MESSAGE_HINT)
