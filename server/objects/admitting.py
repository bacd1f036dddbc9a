"""What the verbs hand admission: kube's admission.Attributes, and the slot where the core's admission chain
(server/admission/) is installed once the core is composed.

Contract: every create, update (PUT, patch, apply, subresource writes through guaranteed_update) and delete
calls `admit` once per attempt, after the kind's validation and before the write, with the request's
operation, subresource, options and dry-run flag. An update calls `mutate` first, on the updated object before
the kind prepares and validates it (kube runs mutating admission inside UpdatedObject, before BeforeUpdate, so
a plugin may restore what an update left out, as Priority and DefaultTolerationSeconds do for a Pod), and then
`admit` with the same Attributes, which runs what remains. Plugins may change `attrs.obj` in place (mutating ones),
append to `attrs.warnings` (answered as Warning headers) and `attrs.audit_annotations` (added to the audit
event), or refuse with an ApiError. Without an installed chain (a bare Core in tests), a write to the object
itself runs the kind's own admission (Strategy.admitted) alone. The audit annotations of every attempt, refused
or not, reach the sink the guard binds for the call (`collecting_audit`), as kube's audit context gathers them;
a key keeps its first value.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from server.machinery.values import Obj
from server.registry.resources import Resource

if TYPE_CHECKING:
    from server.objects.context import Context

Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


@dataclass(slots=True, eq=False)
class Attributes:
    """One admission request. obj: the object to write (None for a delete); old: the stored object (None on
    create). options: the request's CreateOptions/UpdateOptions/PatchOptions/DeleteOptions as JSON. kind: the
    Resource that types obj and old when they are a subresource's own kind, as kube admits a write through
    pods/binding (a v1 Binding), pods/eviction (a policy/v1 Eviction) or /scale (autoscaling/v1 Scales); None
    when they are objects of `resource`."""

    resource: Resource
    operation: Operation
    name: str
    namespace: str
    obj: Obj | None
    old: Obj | None
    dry_run: bool
    subresource: str = ""
    options: Obj = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)
    # What one plugin found for later ones in the same request (LimitRanger's ranges, read once).
    memo: dict[str, object] = field(default_factory=dict)
    kind: Resource | None = None
    mutated: bool = False  # the mutating plugins ran already (`mutate`): `admit` runs the rest


class Chain(Protocol):
    async def admit(self, ctx: Context, attrs: Attributes) -> None:
        """Run every enabled plugin that handles attrs.operation, in kube's order; raise ApiError to refuse."""
        ...

    async def mutate(self, ctx: Context, attrs: Attributes) -> None:
        """Run the mutating plugins alone and mark attrs.mutated; raise ApiError to refuse."""
        ...


@dataclass(slots=True)
class AdmissionSlot:
    """Where the composed core installs its chain (it needs informers, which need the core first)."""

    chain: Chain | None = None


_AUDIT: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("capstan_audit_annotations",
                                                                               default=None)


def collecting_audit(sink: dict[str, str]) -> contextvars.Token[dict[str, str] | None]:
    """Gather the audit annotations admission adds during the current call into sink (until released)."""
    return _AUDIT.set(sink)


def released_audit(token: contextvars.Token[dict[str, str] | None]) -> None:
    _AUDIT.reset(token)


async def mutate(ctx: Context, attrs: Attributes) -> None:
    """An update's mutating admission, before the kind prepares and validates the object (nothing without a
    chain: a bare Core's kinds admit in `admit` alone)."""
    chain = ctx.admission.chain
    if chain is not None:
        await _through(chain.mutate, ctx, attrs)


async def admit(ctx: Context, attrs: Attributes) -> None:
    chain = ctx.admission.chain
    if chain is not None:
        await _through(chain.admit, ctx, attrs)
    elif attrs.obj is not None and not attrs.subresource and attrs.kind is None:
        await attrs.resource.strategy.admitted(ctx, attrs.obj, attrs.old, attrs.dry_run)


async def _through(step: Callable[[Context, Attributes], Awaitable[None]], ctx: Context, attrs: Attributes) -> None:
    """A step of the chain; the audit annotations its plugins added reach the request's event, refused or not."""
    try:
        await step(ctx, attrs)
    finally:
        sink = _AUDIT.get()
        if sink is not None:
            for key, value in attrs.audit_annotations.items():
                sink.setdefault(key, value)
