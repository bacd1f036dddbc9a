"""Resources as data: group/version/resource <-> kind <-> schema, scope, verbs, subresources.

Every route the gateway serves and every rule the core applies is looked up
here; nothing in the core is written per kind. Built-in kinds are registered
from server/kinds/; custom resources will be registered from CRDs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from google.protobuf.descriptor import Descriptor

# A JSON-shaped object: the Kubernetes "unstructured" form the core works on.
Obj = dict[str, Any]

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

# What a delete without a propagation policy does with the object's dependents (rest.GarbageCollectionPolicy):
# DeleteDependents lets the garbage collector delete them in the background; OrphanDependents adds the
# `orphan` finalizer (the legacy default of extensions/v1beta1 and apps/v1beta1 workloads); Unsupported never
# adds a garbage collector finalizer.
GarbageCollectionPolicy = Literal["DeleteDependents", "OrphanDependents", "Unsupported"]


class Schema(Protocol):
    """How a kind's objects are checked and encoded. Implementations: server/schema.py."""

    @property
    def proto_message(self) -> str:
        """Full protobuf message name, or "" for kinds that are JSON only."""
        ...

    @property
    def descriptor(self) -> Descriptor | None:
        """The kind's protobuf message descriptor (None for JSON-only kinds): merge keys and list types."""
        ...

    def normalize(self, obj: Obj) -> tuple[Obj, list[str]]:
        """The object as the schema types it (unknown fields dropped), and the unknown fields' paths.

        Raises server.schema.SchemaError for a value of the wrong type.
        """
        ...

    def from_proto(self, data: bytes) -> Obj:
        """Decode the kind's protobuf message into the JSON form."""
        ...

    def to_proto(self, obj: Obj) -> bytes:
        """Encode a normalized object as the kind's protobuf message ("" kinds: b"")."""
        ...


@dataclass(frozen=True, slots=True)
class Subresource:
    """A subresource; an update through it changes only the field at `field_path` (e.g. ("status",))."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    field_path: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Column:
    """A Table column; `cell` computes its value from the object."""

    name: str
    type: str
    description: str
    cell: Callable[[Obj], object]
    format: str = ""
    priority: int = 0


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    resource: str  # plural
    kind: str
    singular: str
    namespaced: bool
    schema: Schema
    verbs: tuple[str, ...] = ALL_VERBS
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[Subresource, ...] = ()
    # Extra fieldSelector fields beyond metadata.name/metadata.namespace: name -> value getter.
    field_getters: Mapping[str, Callable[[Obj], str]] = field(default_factory=dict)
    columns: tuple[Column, ...] = ()
    # metadata.generation starts at 1 and rises when anything but metadata and status changes.
    tracks_generation: bool = False
    # PUT to a missing object creates it (201).
    create_on_update: bool = False
    # DELETE answers with the deleted object rather than a Success Status.
    returns_deleted_object: bool = False
    # Marks an object for deletion beyond metadata (e.g. a namespace's phase) and says whether
    # anything besides metadata.finalizers still holds it (a namespace's spec.finalizers).
    holds_deletion: Callable[[Obj], bool] | None = None
    mark_deleting: Callable[[Obj], None] | None = None
    # Admission of a delete by name (raise ApiError to refuse), e.g. namespaces that may never go.
    admit_delete: Callable[[str], None] | None = None
    # Deleting an object already being deleted (and still held) answers 409 Conflict with this detail
    # instead of the object; and precondition conflicts are worded "Precondition failed: ..." against
    # the resource (namespaces' own REST delete) rather than rest.BeforeDelete's way.
    redelete_conflict: str = ""
    legacy_preconditions: bool = False
    # How names are checked: name_rule(name, prefix) -> error details; None means DNS-1123 subdomain.
    name_rule: Callable[[str, bool], list[str]] | None = None
    # Kind-specific defaulting and validation, run on create and update (old is None on create).
    prepare: Callable[[Obj, Obj | None], None] | None = None
    validate: Callable[[Obj, Obj | None], Sequence[Any]] | None = None
    garbage_collection: GarbageCollectionPolicy = "DeleteDependents"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def has_status(self) -> bool:
        return any(s.name == "status" for s in self.subresources)

    def subresource(self, name: str) -> Subresource | None:
        return next((s for s in self.subresources if s.name == name), None)

    def key_prefix(self, namespace: str = "") -> bytes:
        """Storage keys: /<group or "core">/<resource>/[<namespace>/]<name>. Versions share keys."""
        base = f"/{self.group or 'core'}/{self.resource}/"
        if self.namespaced and namespace:
            base += namespace + "/"
        return base.encode()

    def key(self, namespace: str, name: str) -> bytes:
        return self.key_prefix(namespace) + name.encode()

    def selectable_fields(self) -> tuple[str, ...]:
        base = ("metadata.name", "metadata.namespace") if self.namespaced else ("metadata.name",)
        return (*base, *self.field_getters)

    def field_values(self, obj: Obj) -> dict[str, str]:
        meta = obj.get("metadata") or {}
        values = {"metadata.name": meta.get("name", "")}
        if self.namespaced:
            values["metadata.namespace"] = meta.get("namespace", "")
        for name, getter in self.field_getters.items():
            values[name] = getter(obj)
        return values


class Registry:
    """Resources by (group, version, resource), and the versions of each group."""

    def __init__(self, resources: Iterable[Resource] = ()) -> None:
        self._by_gvr: dict[tuple[str, str, str], Resource] = {}
        for resource in resources:
            self.add(resource)

    def add(self, resource: Resource) -> None:
        self._by_gvr[(resource.group, resource.version, resource.resource)] = resource

    def remove(self, group: str, version: str, resource: str) -> None:
        self._by_gvr.pop((group, version, resource), None)

    def get(self, group: str, version: str, resource: str) -> Resource | None:
        return self._by_gvr.get((group, version, resource))

    def by_group_resource(self, group: str, resource: str) -> list[Resource]:
        return [r for r in self._by_gvr.values() if r.group == group and r.resource == resource]

    def by_kind(self, group: str, version: str, kind: str) -> Resource | None:
        """The resource of a kind in one group/version (what an ownerReference names), None if none is served."""
        return next((r for r in self._by_gvr.values()
                     if r.kind == kind and r.group == group and r.version == version), None)

    def namespaced(self) -> list[Resource]:
        """One entry per stored resource (the first version of each group/resource)."""
        seen: dict[tuple[str, str], Resource] = {}
        for r in self._by_gvr.values():
            if r.namespaced:
                seen.setdefault((r.group, r.resource), r)
        return list(seen.values())

    def __iter__(self) -> Any:
        return iter(list(self._by_gvr.values()))
