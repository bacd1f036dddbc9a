"""policy/v1 PodDisruptionBudget: registry entry and validation, as kube-apiserver's
(pkg/apis/policy/validation, pkg/registry/policy/poddisruptionbudget).

A budget selects pods and says how many must stay available (minAvailable) or may be unavailable
(maxUnavailable), never both; the disruption controller writes its status through /status. A new budget starts
with the four counters at 0, as Go prints the status struct kube's strategy resets:

    status: {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
"""

from __future__ import annotations

import json

from capstan.api.policy.v1 import policy_pb2
from server.kinds.apps import _not_over_100_percent, _positive_int_or_percent
from server.kinds.templates import nonnegative
from server.machinery.schema import ProtoSchema
from server.machinery.selectors import labels
from server.machinery.validation.names import FieldError, GoValue
from server.machinery.values import Obj
from server.registry.resources import Resource, Subresource
from server.registry.strategy import Declared

EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")
NEW_STATUS = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}


def prepare_pdb(obj: Obj, old: Obj | None) -> None:
    """podDisruptionBudgetStrategy.PrepareForCreate: a new budget's status is the zero status."""
    if old is None:
        obj["status"] = dict(NEW_STATUS)


def _internal_spec(spec: Obj) -> GoValue:
    """The internal PodDisruptionBudgetSpec as ErrorBody prints it: JSON of a struct without json tags."""
    fields = {"MinAvailable": spec.get("minAvailable"), "Selector": spec.get("selector"),
              "MaxUnavailable": spec.get("maxUnavailable"),
              "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy")}
    return GoValue(json.dumps(fields, separators=(",", ":")))


def _spec_errors(spec: Obj) -> list[FieldError]:
    """ValidatePodDisruptionBudgetSpec."""
    errs: list[FieldError] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        errs.append(FieldError.invalid("spec", _internal_spec(spec),
                                       "minAvailable and maxUnavailable cannot be both set"))
    for field in ("minAvailable", "maxUnavailable"):
        value = spec.get(field)
        if value is not None:
            errs += _positive_int_or_percent(value, f"spec.{field}") + _not_over_100_percent(value, f"spec.{field}")
    selector = spec.get("selector")
    if isinstance(selector, dict):
        errs += labels.validate_label_selector(selector, "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in EVICTION_POLICIES:
        errs.append(FieldError.not_supported("spec.unhealthyPodEvictionPolicy", policy, EVICTION_POLICIES))
    return errs


def _status_errors(status: Obj) -> list[FieldError]:
    """ValidatePodDisruptionBudgetStatusUpdate's counters (policy/v1)."""
    errs: list[FieldError] = []
    for field in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        errs += nonnegative(status.get(field), f"status.{field}")
    return errs


def validate_pdb(obj: Obj, old: Obj | None) -> list[FieldError]:
    spec = obj.get("spec")
    status = obj.get("status")
    return (_spec_errors(spec if isinstance(spec, dict) else {})
            + _status_errors(status if isinstance(status, dict) else {}))


PODDISRUPTIONBUDGETS = Resource(
    group="policy", version="v1", resource="poddisruptionbudgets", kind="PodDisruptionBudget",
    singular="poddisruptionbudget", namespaced=True, schema=ProtoSchema(policy_pb2.PodDisruptionBudget),
    short_names=("pdb",),
    # podDisruptionBudgetStatusStrategy keeps the request's metadata and the stored spec.
    subresources=(Subresource("status", "PodDisruptionBudget", ("get", "patch", "update"), ("status",),
                              metadata_reset=()),),
    strategy=Declared(tracks_generation=True, prepare=prepare_pdb, validation=validate_pdb, unconditional_update=False),
)

KINDS = (PODDISRUPTIONBUDGETS,)
