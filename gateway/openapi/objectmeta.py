"""kube's descriptions of ObjectMeta (k8s.io/apimachinery/pkg/apis/meta/v1 types_swagger_doc_generated.go,
1.28), laid over the ObjectMeta component of every document: `kubectl explain <kind>.metadata` — a custom
resource's included, whose metadata is a $ref to this shared definition — shows kube's text for the type and
each field rather than Capstan's proto comments.
"""

from __future__ import annotations

from typing import Any

NAME = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
_OBJECTS = "https://kubernetes.io/docs/concepts/overview/working-with-objects"

DESCRIPTION = ("ObjectMeta is metadata that all persisted resources must have, which includes all objects users "
               "must create.")
FIELDS = {
    "annotations": "Annotations is an unstructured key value map stored with a resource that may be set by external "
                   "tools to store and retrieve arbitrary metadata. They are not queryable and should be preserved "
                   f"when modifying objects. More info: {_OBJECTS}/annotations",
    "creationTimestamp": "CreationTimestamp is a timestamp representing the server time when this object was "
                         "created. It is not guaranteed to be set in happens-before order across separate "
                         "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
                         "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
                         f"{_CONVENTIONS}#metadata",
    "deletionGracePeriodSeconds": "Number of seconds allowed for this object to gracefully terminate before it will "
                                  "be removed from the system. Only set when deletionTimestamp is also set. May only "
                                  "be shortened. Read-only.",
    "deletionTimestamp": "DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. This "
                         "field is set by the server when a graceful deletion is requested by the user, and is not "
                         "directly settable by a client. The resource is expected to be deleted (no longer visible "
                         "from resource lists, and not reachable by name) after the time in this field, once the "
                         "finalizers list is empty. As long as the finalizers list contains items, deletion is "
                         "blocked. Once the deletionTimestamp is set, this value may not be unset or be set further "
                         "into the future, although it may be shortened or the resource may be deleted prior to this "
                         "time. For example, a user may request that a pod is deleted in 30 seconds. The Kubelet will "
                         "react by sending a graceful termination signal to the containers in the pod. After that 30 "
                         "seconds, the Kubelet will send a hard termination signal (SIGKILL) to the container and "
                         "after cleanup, remove the pod from the API. In the presence of network partitions, this "
                         "object may still exist after this timestamp, until an administrator or automated process "
                         "can determine the resource is fully terminated. If not set, graceful deletion of the object "
                         "has not been requested.\n\nPopulated by the system when a graceful deletion is requested. "
                         f"Read-only. More info: {_CONVENTIONS}#metadata",
    "finalizers": "Must be empty before the object is deleted from the registry. Each entry is an identifier for the "
                  "responsible component that will remove the entry from the list. If the deletionTimestamp of the "
                  "object is non-nil, entries in this list can only be removed. Finalizers may be processed and "
                  "removed in any order.  Order is NOT enforced because it introduces significant risk of stuck "
                  "finalizers. finalizers is a shared field, any actor with permission can reorder it. If the "
                  "finalizer list is processed in order, then this can lead to a situation in which the component "
                  "responsible for the first finalizer in the list is waiting for a signal (field value, external "
                  "system, or other) produced by a component responsible for a finalizer later in the list, "
                  "resulting in a deadlock. Without enforced ordering finalizers are free to order amongst "
                  "themselves and are not vulnerable to ordering changes in the list.",
    "generateName": "GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the "
                    "Name field has not been provided. If this field is used, the name returned to the client will "
                    "be different than the name passed. This value will also be combined with a unique suffix. The "
                    "provided value has the same validation rules as the Name field, and may be truncated by the "
                    "length of the suffix required to make the value unique on the server.\n\nIf this field is "
                    "specified and the generated name exists, the server will return a 409.\n\nApplied only if Name "
                    f"is not specified. More info: {_CONVENTIONS}#idempotency",
    "generation": "A sequence number representing a specific generation of the desired state. Populated by the "
                  "system. Read-only.",
    "labels": "Map of string keys and values that can be used to organize and categorize (scope and select) "
              "objects. May match selectors of replication controllers and services. More info: "
              f"{_OBJECTS}/labels",
    "managedFields": "ManagedFields maps workflow-id and version to the set of fields that are managed by that "
                     "workflow. This is mostly for internal housekeeping, and users typically shouldn't need to set "
                     "or understand this field. A workflow can be the user's name, a controller's name, or the name "
                     "of a specific apply path like \"ci-cd\". The set of fields is always in the version that the "
                     "workflow used when modifying the object.",
    "name": "Name must be unique within a namespace. Is required when creating resources, although some resources "
            "may allow a client to request the generation of an appropriate name automatically. Name is primarily "
            "intended for creation idempotence and configuration definition. Cannot be updated. More info: "
            f"{_OBJECTS}/names#names",
    "namespace": "Namespace defines the space within which each name must be unique. An empty namespace is "
                 "equivalent to the \"default\" namespace, but \"default\" is the canonical representation. Not all "
                 "objects are required to be scoped to a namespace - the value of this field for those objects will "
                 "be empty.\n\nMust be a DNS_LABEL. Cannot be updated. More info: "
                 f"{_OBJECTS}/namespaces",
    "ownerReferences": "List of objects depended by this object. If ALL objects in the list have been deleted, this "
                       "object will be garbage collected. If this object is managed by a controller, then an entry "
                       "in this list will point to this controller, with the controller field set to true. There "
                       "cannot be more than one managing controller.",
    "resourceVersion": "An opaque value that represents the internal version of this object that can be used by "
                       "clients to determine when objects have changed. May be used for optimistic concurrency, "
                       "change detection, and the watch operation on a resource or set of resources. Clients must "
                       "treat these values as opaque and passed unmodified back to the server. They may only be "
                       "valid for a particular resource or set of resources.\n\nPopulated by the system. Read-only. "
                       "Value must be treated as opaque by clients and . More info: "
                       f"{_CONVENTIONS}#concurrency-control-and-consistency",
    "selfLink": "Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.",
    "uid": "UID is the unique in time and space value for this object. It is typically generated by the server on "
           "successful creation of a resource and is not allowed to change on PUT operations.\n\nPopulated by the "
           f"system. Read-only. More info: {_OBJECTS}/names#uids",
}


def describe(schemas: dict[str, Any]) -> None:
    """Give the ObjectMeta component, when the document has one, kube's descriptions."""
    schema = schemas.get(NAME)
    if schema is None:
        return
    schema["description"] = DESCRIPTION
    properties = schema.get("properties") or {}
    for name, prop in properties.items():
        if name not in FIELDS:
            continue
        if set(prop) == {"$ref"}:  # a described $ref is wrapped, as kube-openapi writes v3
            properties[name] = prop = {"allOf": [prop]}
        prop["description"] = FIELDS[name]
