"""apiextensions.k8s.io/v1 CustomResourceDefinition: its registry entry and kind-specific rules.

Defaults and validation are server/crd/definition.py. Deleting a CRD does not remove it at once: as
kube-apiserver's CRD storage does, the first delete adds the `customresourcecleanup.apiextensions.k8s.io`
finalizer and a Terminating condition; the CRD controller (server/controllers/crds.py) then deletes every
object of the kind and removes the finalizer, and the core deletes the CRD.
"""

from __future__ import annotations

from dataclasses import dataclass

from capstan.api.apiextensions.v1 import apiextensions_pb2 as apiextensions_v1
from server.crd import definition
from server.machinery import meta
from server.machinery.schema import ProtoSchema
from server.machinery.values import Obj
from server.registry.resources import Resource, Subresource
from server.registry.strategy import Declared

GROUP = "apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


@dataclass(frozen=True, kw_only=True, eq=False)
class CustomResourceDefinitionStrategy(Declared):
    """The CRD's rules: its deletion waits for its custom resources to go (the cleanup finalizer, removed by
    server/controllers/crds.py once they are gone)."""

    def holds_deletion(self, obj: Obj) -> bool:
        """A CRD not yet marked is held: the first delete marks it (and adds the cleanup finalizer)."""
        return not meta.meta(obj).get("deletionTimestamp")

    def mark_deleting(self, obj: Obj) -> None:
        """The first delete: the cleanup finalizer and Terminating "InstanceDeletionPending"."""
        finalizers = meta.meta(obj).setdefault("finalizers", [])
        if CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CLEANUP_FINALIZER)
        set_condition(obj, {
            "type": "Terminating", "status": "True", "reason": "InstanceDeletionPending",
            "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        })


def set_condition(crd: Obj, condition: dict[str, str]) -> bool:
    """SetCRDCondition: replace the condition of that type (its lastTransitionTime kept while its status
    stays), or append it. Whether anything changed."""
    status = crd.setdefault("status", {})
    conditions: list[dict[str, object]] = status.get("conditions") or []  # null: Go's nil slice
    status["conditions"] = conditions
    for index, existing in enumerate(conditions):
        if existing.get("type") != condition["type"]:
            continue
        if existing.get("status") != condition["status"] or "lastTransitionTime" not in existing:
            conditions[index] = _ordered(condition, meta.now())
            return True
        replaced = _ordered(condition, str(existing["lastTransitionTime"]))
        conditions[index] = replaced
        return replaced != existing
    conditions.append(_ordered(condition, meta.now()))
    return True


def _ordered(condition: dict[str, str], since: str) -> dict[str, object]:
    """Go's field order: type, status, lastTransitionTime, reason, message."""
    out: dict[str, object] = {"type": condition["type"], "status": condition["status"], "lastTransitionTime": since}
    out.update((k, condition[k]) for k in ("reason", "message") if condition.get(k))
    return out


CUSTOM_RESOURCE_DEFINITIONS = Resource(
    group=GROUP, version="v1", resource="customresourcedefinitions", kind="CustomResourceDefinition",
    singular="customresourcedefinition", namespaced=False,
    schema=ProtoSchema(apiextensions_v1.CustomResourceDefinition),
    short_names=("crd", "crds"),
    storage_group_version="apiextensions.k8s.io/v1beta1",  # kube 1.28 still stores CRDs as v1beta1
    categories=("api-extensions",),
    # statusStrategy means to reset metadata but resets new to itself (ResetObjectMetaForStatus(new, new)), so
    # metadata changes through /status are kept.
    subresources=(Subresource("status", "CustomResourceDefinition", ("get", "patch", "update"), ("status",),
                              metadata_reset=()),),
    strategy=CustomResourceDefinitionStrategy(tracks_generation=True, standard_finalizers=False,
                                              unconditional_update=False,
                                              defaults=definition.default, prepare=definition.prepare,
                                              validation=definition.validate),
)

KINDS = (CUSTOM_RESOURCE_DEFINITIONS,)
