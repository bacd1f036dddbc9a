"""coordination.k8s.io/v1 Lease: what leader election (client-go's and the official Python client's lease
locks) reads and writes, with kube-apiserver's validation (pkg/apis/coordination/validation).

A lease holder renews spec.renewTime (a MicroTime, "2024-05-01T12:00:00.123456Z") within
spec.leaseDurationSeconds; a candidate takes an expired lease over with an update whose resourceVersion
is the one it read, so of two candidates exactly one wins and the other gets 409 Conflict.
spec.strategy and spec.preferredHolder belong to CoordinatedLeaderElection, an alpha feature that is off in
Kubernetes 1.32: they are dropped on write, as kube-apiserver drops them.
"""

from __future__ import annotations

from capstan.api.coordination.v1 import coordination_pb2
from server.kinds.templates import get
from server.machinery.schema import ProtoSchema
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.registry.resources import Resource
from server.registry.strategy import Declared

GATED_FIELDS = ("strategy", "preferredHolder")  # CoordinatedLeaderElection


def prepare_lease(obj: Obj, old: Obj | None) -> None:
    """leaseStrategy.PrepareForCreate/ForUpdate with the feature off: the gated fields go, unless already stored."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for field in GATED_FIELDS:
        if old is None or get(old, "spec", field) is None:
            spec.pop(field, None)


def validate_lease(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateLeaseSpec: a positive duration, non-negative transitions, no preferredHolder without a strategy."""
    spec = obj.get("spec") or {}
    errs: list[FieldError] = []
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        errs.append(FieldError.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        errs.append(FieldError.invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    if spec.get("preferredHolder") and not spec.get("strategy"):
        errs.append(FieldError.forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"))
    return errs


LEASES = Resource(
    group="coordination.k8s.io", version="v1", resource="leases", kind="Lease", singular="lease", namespaced=True,
    schema=ProtoSchema(coordination_pb2.Lease),
    strategy=Declared(prepare=prepare_lease, validation=validate_lease, unconditional_update=False),
)

KINDS = (LEASES,)
