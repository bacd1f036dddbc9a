"""Resources as data: group/version/resource <-> kind <-> schema, scope, verbs, subresources.

Every route the gateway serves and every rule the core applies is looked up
here; nothing in the core is written per kind. Built-in kinds are registered
from server/kinds/; custom resources will be registered from CRDs.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol

from google.protobuf.descriptor import Descriptor

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery.values import Obj
from server.registry.strategy import DEFAULT, Strategy

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

class Schema(Protocol):
    """How a kind's objects are checked and encoded. Implementations: server/machinery/schema.py."""

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

        Raises server.machinery.schema.SchemaError for a value of the wrong type.
        """
        ...

    def from_proto(self, data: bytes) -> Obj:
        """Decode the kind's protobuf message into the JSON form."""
        ...

    def to_proto(self, obj: Obj) -> bytes:
        """Encode a normalized object as the kind's protobuf message ("" kinds: b"")."""
        ...


# The handlers of one (resource, subresource), each given (context, resource, request). The context is the
# verbs' (server.objects.context.Context), a layer above this one.
GetHandler = Callable[[Any, "Resource", core_pb2.GetRequest], Awaitable[core_pb2.GetResponse]]
CreateHandler = Callable[[Any, "Resource", core_pb2.CreateRequest], Awaitable[core_pb2.CreateResponse]]
UpdateHandler = Callable[[Any, "Resource", core_pb2.UpdateRequest], Awaitable[core_pb2.UpdateResponse]]
PatchHandler = Callable[[Any, "Resource", core_pb2.PatchRequest], Awaitable[core_pb2.PatchResponse]]


@dataclass(frozen=True, slots=True)
class Handlers:
    """What answers a verb on one (resource, subresource) instead of the generic verb, as kube-apiserver installs
    a subresource's own REST storage: /scale's ScaleREST, pods/binding's BindingREST, pods/log's LogREST. A
    handler that writes an object writes it through the one guaranteed-update path (server/objects/update.py).

    `get` answers GET (/scale). `connect` answers a getter or connecter whose answer is not an object of the
    store (pods/log, pods/exec, pods/proxy): it is reached by GET and, through GetRequest.connect_verb, by the
    other methods the subresource serves; GetRequest.query carries the request's query (the connecter's
    options) and a response without an object answers 204 No Content. `create` answers POST (pods/binding,
    pods/eviction, serviceaccounts/token; on the resource itself, core/v1 bindings, which are never stored).
    `update` and `patch` answer PUT and PATCH (/scale). A verb without a handler is the generic verb's.
    """

    get: GetHandler | None = None
    connect: GetHandler | None = None
    create: CreateHandler | None = None
    update: UpdateHandler | None = None
    patch: PatchHandler | None = None


NO_HANDLERS = Handlers()


@dataclass(frozen=True, slots=True)
class AdmittedAs:
    """How admission sees an update through a subresource whose kind is not the resource's, as kube's REST of
    that subresource hands admission its own objects (/scale: the object and the stored one as autoscaling/v1
    Scales). `kind` types those objects (a Resource that is never served), `show` makes one of an object, and
    `take` answers the object with a changed one (a mutating webhook's) put back."""

    kind: Resource
    show: Callable[[Obj], Obj]
    take: Callable[[Obj, Obj], Obj]


@dataclass(frozen=True, slots=True)
class Subresource:
    """A subresource; an update through it changes only the field at `field_path` (e.g. ("status",)) and, when
    `metadata_reset` is not None, the object's metadata.

    `metadata_reset` is what the kind's status strategy (PrepareForUpdate) does with the request's metadata. None
    keeps none of it: metadata stays as stored (/scale; a custom resource's /status, whose strategy copies the
    stored object and sets only status). A tuple keeps the request's metadata, as built-in status strategies do
    (an annotation or label added through /status stays), except the metadata fields named, which stay as stored
    and which no manager gains there (GetResetFields): ("labels",) for a Deployment's /status. uid,
    creationTimestamp, deletionTimestamp, generation and a set deletionGracePeriodSeconds always stay as stored,
    as rest.BeforeUpdate keeps them on any update.

    `group`, `version` and `proto_message` name the subresource's kind when it is not one of the resource's
    own group version (/scale answers autoscaling/v1 Scale); empty means the resource's.

    `prepare` is the rest of the subresource's strategy (PrepareForUpdate), run on (new, old) after the field
    was taken: a CSR's /approval and /status set their conditions' timestamps there.

    `validate` is the subresource strategy's ValidateUpdate, run on (new, old) instead of the resource's own
    validation when its strategy validates otherwise (pods/ephemeralcontainers: only additions to
    spec.ephemeralContainers); None runs the resource's.

    `handlers` answer the subresource's verbs that are not the generic update of `field_path` (Handlers).

    `admitted_as`, when given, is how admission sees an update through it (AdmittedAs); None: the object itself.
    """

    name: str
    kind: str
    verbs: tuple[str, ...]
    field_path: tuple[str, ...] = ()
    group: str = ""
    version: str = ""
    proto_message: str = ""
    metadata_reset: tuple[str, ...] | None = None
    prepare: Callable[[Obj, Obj], None] | None = None
    validate: Callable[[Obj, Obj], Sequence[Any]] | None = None
    handlers: Handlers = NO_HANDLERS
    admitted_as: AdmittedAs | None = None


@dataclass(frozen=True, slots=True)
class ScaleRule:
    """How a resource reads and writes as an autoscaling/v1 Scale through its /scale subresource
    (server/objects/scale.py): Scale.spec.replicas is the object's spec.replicas, Scale.status.replicas its
    status.replicas, and Scale.status.selector its spec.selector as a label query (`app=web,tier in (db)`).

    selector: how spec.selector is written: "LabelSelector" (apps/v1 kinds) or "Set", a plain label map
    (core/v1 ReplicationController), or "String": already a label query (a custom resource's
    labelSelectorPath).

    The paths are where the three live; a custom resource's CRD names them (specReplicasPath,
    statusReplicasPath, labelSelectorPath; an empty label_selector means none: Scale.status.selector "").

    missing: the (group, resource) a GET of a missing object's Scale is kube's 404 of, where its ScaleREST names
    its own (`deployments/scale.apps "x" not found`); None: the object's own 404 (StatefulSets, custom resources).
    """

    selector: Literal["LabelSelector", "Set", "String"] = "LabelSelector"
    spec_replicas: tuple[str, ...] = ("spec", "replicas")
    status_replicas: tuple[str, ...] = ("status", "replicas")
    label_selector: tuple[str, ...] = ("spec", "selector")
    missing: tuple[str, str] | None = None


# The /scale subresource (its handlers: server/objects/scale.py); an update through it changes spec.replicas only.
SCALE = Subresource("scale", "Scale", ("get", "patch", "update"), ("spec", "replicas"),
                    group="autoscaling", version="v1", proto_message="k8s.io.api.autoscaling.v1.Scale")


@dataclass(frozen=True, slots=True)
class StoredAs:
    """Where and in which form a resource kept in another resource's storage is stored, as kube-apiserver keeps
    events.k8s.io/v1 Events in the core/v1 Event storage: an object written through either API is read through
    both. `group` and `resource` name the storage keys, `schema` types the stored (the other resource's) form;
    `to_storage` and `from_storage` convert an object's JSON form between the two, each answering an object typed
    by the schema of its side. Field selectors and Tables work on the stored form (kube selects and prints the
    internal object), so a resource stored so names its field getters and columns in the stored form's fields.
    """

    group: str
    resource: str
    schema: Schema
    to_storage: Callable[[Obj], Obj]
    from_storage: Callable[[Obj], Obj]


class Converter(Protocol):
    """Converts a resource's objects between its versions by a call out (a CRD's conversion webhook).

    storage_version: the version objects are stored at; stored_versions: every version objects may still be
    stored at (the CRD's status.storedVersions). convert: the objects (each with apiVersion and kind) as
    `api_version` (group/version), in order; an ApiError carrying kube's Status when the call fails or its
    answer is unusable, for all of them at once."""

    @property
    def storage_version(self) -> str: ...

    @property
    def stored_versions(self) -> tuple[str, ...]: ...

    async def convert(self, objs: list[Obj], api_version: str) -> list[Obj]: ...


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
    # The kind's rules (server/registry/strategy.py): defaults, preparation, validation, admission, deletion.
    strategy: Strategy = DEFAULT
    # Handlers that answer verbs of the resource itself instead of the generic verbs (core/v1 bindings: a create
    # that binds the Pod the body names, never stored); a subresource's are its own (Subresource.handlers).
    handlers: Handlers = NO_HANDLERS
    # Create-only resources that are answered, never stored (the reviews: SubjectAccessReview, TokenReview, ...):
    # (context, resource, object) -> the object the client gets back with 201 Created. It gets the typed body
    # after kube's create handler has placed its namespace and recorded its managed fields, and runs as the
    # call's caller (server.auth.caller); nothing of the stored-object path (defaults, names, uid) applies.
    # A dry run is answered the same way: there is nothing to store either way.
    answer_create: Callable[[Any, Resource, Obj], Awaitable[Obj]] | None = None
    # The list kind when it is not kind + "List" (a CRD's names.listKind).
    custom_list_kind: str = ""
    # Kept in another resource's storage, in that resource's form (events.k8s.io/v1 Events).
    stored_as: StoredAs | None = None
    # Applied to a stored value before it is rendered for an answer: a custom resource's schema defaults (and
    # prunes) objects read from storage, as kube-apiserver does, so a default added later shows on reads.
    read: Callable[[bytes], bytes] | None = None
    # Objects stored at another version of the resource and converted by a call (a CRD converting by webhook):
    # server/objects/conversion.py converts every value read and every object written through it.
    converter: Converter | None = None
    # Objects computed on every read instead of stored (core/v1 componentstatuses, each the health of a
    # component): (context) -> the objects, in order. get and list (and their Tables, selectors applied) answer
    # from them (server/objects/computed.py); such a resource serves only those two verbs.
    computed: Callable[[Any], Awaitable[list[Obj]]] | None = None
    # What a get of a name that is not among the computed objects answers, when not the usual 404.
    computed_missing: Callable[[str], Exception] | None = None
    # The warning every answer about the resource carries, as kube-apiserver's installer adds one for a kind
    # its prerelease lifecycle marks deprecated ("v1 ComponentStatus is deprecated in v1.19+"); "" for none.
    deprecation_warning: str = ""
    # The group version ("autoscaling/v2", "v1" for the core group) objects are kept at when not the served one,
    # as kube-apiserver 1.28 keeps them: discovery's storageVersionHash names it.
    storage_group_version: str = ""

    @cached_property
    def api_version(self) -> str:  # read several times a request: made once per Resource
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.custom_list_kind or self.kind + "List"

    @cached_property
    def has_status(self) -> bool:
        return any(s.name == "status" for s in self.subresources)

    def subresource(self, name: str) -> Subresource | None:
        return next((s for s in self.subresources if s.name == name), None)

    def handlers_of(self, subresource: str) -> Handlers:
        """The handlers registered for (this resource, subresource); "" names the resource itself."""
        if not subresource:
            return self.handlers
        sub = self.subresource(subresource)
        return NO_HANDLERS if sub is None else sub.handlers

    def key_prefix(self, namespace: str = "") -> bytes:
        """Storage keys: /<group or "core">/<resource>/[<namespace>/]<name>. Versions share keys, and so do
        resources stored as another (`stored_as`)."""
        group, resource = (self.group, self.resource) if self.stored_as is None else (
            self.stored_as.group, self.stored_as.resource)
        base = f"/{group or 'core'}/{resource}/"
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


@dataclass(frozen=True, slots=True)
class AggregatedVersion:
    """A group version an extension API server serves (an APIService with a service), for discovery: its
    priorities, whether it is Available, and the backend's APIResourceList and OpenAPI v3 document (JSON) as last
    fetched (b"" before)."""

    group: str
    version: str
    group_priority_minimum: int
    version_priority: int
    available: bool = False
    resources: bytes = b""
    openapi_v3: bytes = b""  # the backend's /openapi/v3/apis/<group>/<version> (JSON), b"" when none


class Registry:
    """Resources by (group, version, resource), and the versions of each group; the aggregated group versions
    (served by extension API servers, proxied) by (group, version).

    `generation` rises with every change to what is served (CRDs come and go at run time), so discovery
    caches can tell whether they are current; the listeners `on_change` registers are called after each change
    (synchronously: a listener queues work, it does not do it).
    """

    def __init__(self, resources: Iterable[Resource] = ()) -> None:
        self._by_gvr: dict[tuple[str, str, str], Resource] = {}
        self._listeners: dict[int, Callable[[], None]] = {}  # by registration; every open watch holds one
        self._registered = itertools.count()
        self.aggregated: dict[tuple[str, str], AggregatedVersion] = {}
        self.generation = 1
        for resource in resources:
            self.add(resource)

    def on_change(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener` after every change to what is served; the answer unregisters it."""
        key = next(self._registered)
        self._listeners[key] = listener
        return lambda: self._listeners.pop(key, None) and None

    def _changed(self) -> None:
        self.generation += 1
        for listener in list(self._listeners.values()):
            listener()

    def set_aggregated(self, group: str, version: str, value: AggregatedVersion | None) -> None:
        """Serve (value) or stop serving (None) an aggregated group version; a change raises the generation."""
        if self.aggregated.get((group, version)) == value:
            return
        if value is None:
            del self.aggregated[(group, version)]
        else:
            self.aggregated[(group, version)] = value
        self._changed()

    def add(self, resource: Resource) -> None:
        self._by_gvr[(resource.group, resource.version, resource.resource)] = resource
        self._changed()

    def remove(self, group: str, version: str, resource: str) -> None:
        if self._by_gvr.pop((group, version, resource), None) is not None:
            self._changed()

    def replace(self, old: Iterable[Resource], new: Iterable[Resource]) -> None:
        """Stop serving `old` and serve `new` in one step (a CRD's versions after it changed); `new` keeps its
        order, after everything else (discovery lists a group's versions in registration order)."""
        for resource in old:
            self._by_gvr.pop((resource.group, resource.version, resource.resource), None)
        for resource in new:
            self._by_gvr[(resource.group, resource.version, resource.resource)] = resource
        self._changed()

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
