"""One strategy per kind: what the generic verbs (server/objects/) ask a kind, as kube-apiserver's registry asks
rest.RESTCreateStrategy, RESTUpdateStrategy, RESTDeleteStrategy and RESTGracefulDeleteStrategy.

`Strategy` is kube's default behaviour: no defaults, nothing prepared, nothing but ObjectMeta validated, names
DNS-1123 subdomains, status reset on create and kept from the stored object on update (for kinds with /status),
no create on update, deletion at once and never held, dependents deleted in the background. A kind whose rules
differ overrides the methods in its own module (server/kinds/: the Namespace strategy holds the namespace
deletion rules, the Pod strategy the grace period; server/crd/resource.py the custom resources'). `Declared`
is the strategy of a kind whose rules are its defaulting, preparation and validation functions.

The verbs call every method unconditionally and hold no kind-specific branch. Example: create calls
default, prepare_for_create, reset_status (for a kind with /status), validate, warnings_on_create, canonicalize
and admission, in that order; delete calls admit_delete, holds_deletion, grace_period and mark_deleting.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from server.machinery.validation import names
from server.machinery.validation.names import FieldError

Obj = dict[str, Any]

# What a delete without a propagation policy does with the object's dependents (rest.GarbageCollectionPolicy):
# DeleteDependents lets the garbage collector delete them in the background; OrphanDependents adds the
# `orphan` finalizer (the legacy default of extensions/v1beta1 and apps/v1beta1 workloads); Unsupported never
# adds a garbage collector finalizer.
GarbageCollectionPolicy = Literal["DeleteDependents", "OrphanDependents", "Unsupported"]

# Asynchronous admission after validation, before the write, on create and update (old is None on create):
# (context, object, old, dry_run). The context is the verbs' (server.objects.context.Context), a layer above.
Admit = Callable[[Any, Obj, "Obj | None", bool], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Column:
    """A Table column; `cell` computes its value from the object."""

    name: str
    type: str
    description: str
    cell: Callable[[Obj], object]
    format: str = ""
    priority: int = 0


@dataclass(frozen=True, kw_only=True, eq=False)
class Strategy:
    """A kind's rules, with kube's defaults; kinds override the methods.

    tracks_generation: metadata.generation starts at 1 and rises when anything but metadata and status
    changes. returns_deleted_object: a completed DELETE answers the deleted object rather than a Success
    Status (the store's ReturnDeletedObject). deleted_object_documented: whether the OpenAPI documents say so (None:
    as returns_deleted_object; a kind whose REST wraps its store, as kube's namespaces, answers the object
    undocumented). garbage_collection: the default propagation of a delete.
    columns: the kind's Table columns when they are not the built-in printers' (server/registry/printing: a custom
    resource's additionalPrinterColumns). admission: the admission plugins around the kind's own `admit`
    (set by server/admission for the namespaced kinds); None runs `admit` alone. standard_finalizers: a finalizer
    without a "/" must be one of kube's own (`kubernetes`, `orphan`, `foregroundDeletion`), as core's
    ValidateObjectMeta checks for the kinds it validates; the kinds validated by apimachinery's alone (custom
    resources, CRDs, APIServices, admission configurations) take any qualified name. unconditional_update
    (AllowUnconditionalUpdate): an update whose object carries no resourceVersion (or "0") replaces whatever is
    stored; where False it is kube's 422 `metadata.resourceVersion: Invalid value: 0x0: must be specified for an
    update` (Leases, admission configurations, PodDisruptionBudgets, custom resources, CRDs, ...).
    """

    tracks_generation: bool = False
    returns_deleted_object: bool = False
    deleted_object_documented: bool | None = None
    garbage_collection: GarbageCollectionPolicy = "DeleteDependents"
    columns: tuple[Column, ...] = ()
    admission: Admit | None = None
    standard_finalizers: bool = True
    unconditional_update: bool = True

    # --- create and update -----------------------------------------------------------------------------------

    def default(self, obj: Obj) -> None:
        """Static defaults (kube's SetDefaults_*), in place, on every object a client sends: create and update
        bodies, patch and apply results. Fields they set belong to the writer's manager."""

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        """What is wrong with a name (a generateName when `prefix`): kube's ValidateNameFunc."""
        return names.name_is_dns_subdomain(name, prefix)

    def prepare_for_create(self, obj: Obj) -> None:
        """PrepareForCreate, after field ownership is recorded (what it sets is nobody's)."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """PrepareForUpdate, after field ownership is recorded."""

    def reset_status(self, new: Obj, old: Obj | None) -> None:
        """The status rule of a kind with /status: a new object starts with none, an update keeps the stored
        one (only /status writes it)."""
        if old is None:
            new.pop("status", None)
        elif "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)

    def validate_type_meta(self, obj: Obj) -> Sequence[FieldError]:
        """What is wrong with the object's kind and apiVersion, checked before anything else on create and update;
        when anything is, nothing else is checked (a custom resource's ValidateTypeMeta)."""
        return ()

    def validate(self, obj: Obj) -> Sequence[FieldError]:
        """Validate on create, beyond ObjectMeta."""
        return ()

    def validate_update(self, new: Obj, old: Obj) -> Sequence[FieldError]:
        """ValidateUpdate, beyond ObjectMeta and the rules every update has."""
        return ()

    def warnings_on_create(self, obj: Obj) -> list[str]:
        """WarningsOnCreate: what the response warns of (`Warning: 299 - "..."`) about a valid new object,
        after validation; the texts are kube's."""
        return []

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        """WarningsOnUpdate: the same for a valid update (new as prepared, its generation already raised), on
        every write the update path makes: PUT, PATCH, apply, dry runs, and /scale."""
        return []

    def warnings_on_subresource_update(self, subresource: str, new: Obj, old: Obj) -> list[str]:
        """The WarningsOnUpdate of the strategy an update through `subresource` is written with: /scale writes
        the kind's own store (kube's ScaleREST), so warns as warnings_on_update; the status strategies (and the
        Pod's ephemeral containers strategy) warn of nothing."""
        return self.warnings_on_update(new, old) if subresource == "scale" else []

    def canonicalize(self, obj: Obj) -> None:
        """Canonicalize: the object in its canonical form, after validation."""

    def allow_create_on_update(self) -> bool:
        """AllowCreateOnUpdate: whether a PUT to a missing object creates it."""
        return False

    async def admit(self, ctx: Any, obj: Obj, old: Obj | None, dry_run: bool) -> None:
        """The kind's own admission after validation, before the write (old is None on create): it may set
        server-allocated fields (a Service's clusterIP and nodePorts) or refuse with an ApiError."""

    async def admitted(self, ctx: Any, obj: Obj, old: Obj | None, dry_run: bool) -> None:
        """Everything admission does with the object: the plugins around `admit`, or `admit` alone."""
        if self.admission is not None:
            await self.admission(ctx, obj, old, dry_run)
        else:
            await self.admit(ctx, obj, old, dry_run)

    # --- delete ----------------------------------------------------------------------------------------------

    def admit_delete(self, name: str) -> None:
        """Admission of a delete by name (raise ApiError to refuse): objects that may never go."""

    def holds_deletion(self, obj: Obj) -> bool:
        """Whether anything besides metadata.finalizers still holds the object once marked for deletion."""
        return False

    def mark_deleting(self, obj: Obj) -> None:
        """What marking the object for deletion changes beyond metadata (in place)."""

    def redelete_conflict(self) -> str:
        """Non-empty: deleting an object already being deleted (and still held) answers 409 Conflict with this
        detail instead of the object."""
        return ""

    def legacy_preconditions(self) -> bool:
        """True: precondition conflicts are worded "Precondition failed: ..." against the resource (a REST
        delete of its own) rather than rest.BeforeDelete's way, against the kind."""
        return False

    def grace_period(self, obj: Obj, requested: int | None) -> int | None:
        """RESTGracefulDeleteStrategy.CheckGracefulDelete: given the DeleteOptions' gracePeriodSeconds (None
        when unset), the period the object gets, 0 to delete at once; None: the kind has no graceful
        deletion."""
        return None


@dataclass(frozen=True, kw_only=True, eq=False)
class Declared(Strategy):
    """The strategy of a kind whose rules are functions of its own module.

    defaults: the static defaults. prepare: PrepareForCreate and PrepareForUpdate in one (old is None on
    create). validation: Validate and ValidateUpdate in one (old is None on create). name_rule: how names are
    checked, (name, prefix) -> error details; None means DNS-1123 subdomain. warnings: WarningsOnCreate and
    WarningsOnUpdate in one (old is None on create). own_admission: the kind's own admission (RBAC's escalation
    check). delete_admission: admission of a delete by name (the built-in PriorityClasses stay).
    """

    defaults: Callable[[Obj], None] | None = None
    prepare: Callable[[Obj, Obj | None], None] | None = None
    validation: Callable[[Obj, Obj | None], Sequence[FieldError]] | None = None
    name_rule: Callable[[str, bool], list[str]] | None = None
    warnings: Callable[[Obj, Obj | None], list[str]] | None = None
    own_admission: Admit | None = None
    delete_admission: Callable[[str], None] | None = None

    def default(self, obj: Obj) -> None:
        if self.defaults is not None:
            self.defaults(obj)

    def validate_name(self, name: str, prefix: bool) -> list[str]:
        return (self.name_rule or names.name_is_dns_subdomain)(name, prefix)

    def prepare_for_create(self, obj: Obj) -> None:
        if self.prepare is not None:
            self.prepare(obj, None)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        if self.prepare is not None:
            self.prepare(new, old)

    def validate(self, obj: Obj) -> Sequence[FieldError]:
        return () if self.validation is None else self.validation(obj, None)

    def validate_update(self, new: Obj, old: Obj) -> Sequence[FieldError]:
        return () if self.validation is None else self.validation(new, old)

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return [] if self.warnings is None else self.warnings(obj, None)

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        return [] if self.warnings is None else self.warnings(new, old)

    async def admit(self, ctx: Any, obj: Obj, old: Obj | None, dry_run: bool) -> None:
        if self.own_admission is not None:
            await self.own_admission(ctx, obj, old, dry_run)

    def admit_delete(self, name: str) -> None:
        if self.delete_admission is not None:
            self.delete_admission(name)


DEFAULT = Strategy()
