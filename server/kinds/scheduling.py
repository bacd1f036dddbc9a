"""scheduling.k8s.io/v1 PriorityClass: registry entry, defaults and validation, as kube-apiserver's
(pkg/apis/scheduling/v1/defaults.go, pkg/apis/scheduling/validation, pkg/registry/scheduling/priorityclass).

Names starting with `system-` belong to kube's two built-in classes, which the server creates at start
(SYSTEM_PRIORITY_CLASSES, kube's scheduling/bootstrap-system-priority-classes post-start hook) and which can
never be deleted:

    priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and
    cannot be deleted
"""

from __future__ import annotations

from capstan.api.scheduling.v1 import scheduling_pb2
from server.kinds.templates import immutable
from server.machinery import errors
from server.machinery.schema import ProtoSchema
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.registry.resources import Resource
from server.registry.strategy import Declared

GROUP = "scheduling.k8s.io"
SYSTEM_PREFIX = "system-"
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")  # ValidatePreemptionPolicy's order

# schedulingapiv1.SystemPriorityClasses(): name -> (value, description); neither is a global default.
SYSTEM_PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "system-node-critical": (
        2_000_001_000, "Used for system critical pods that must not be moved from their current node."),
    "system-cluster-critical": (
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
}


def system_priority_class(name: str) -> Obj:
    """One of kube's built-in classes as the scheduling post-start hook creates it."""
    value, description = SYSTEM_PRIORITY_CLASSES[name]
    return {"apiVersion": f"{GROUP}/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value,
            "description": description}


def default_priority_class(obj: Obj) -> None:
    """SetDefaults_PriorityClass."""
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")


def _known_system_class_error(name: str, value: object, global_default: bool) -> str:
    """IsKnownSystemPriorityClass's error, "" when the class is one of the built-in ones as they are."""
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known[0]:
        return f"value of {name} PriorityClass must be {known[0]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


def validate_priority_class(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidatePriorityClass, and ValidatePriorityClassUpdate's immutable value and preemptionPolicy."""
    errs: list[FieldError] = []
    name = (obj.get("metadata") or {}).get("name", "")
    value = obj.get("value", 0)
    if name.startswith(SYSTEM_PREFIX):
        problem = _known_system_class_error(name, value, bool(obj.get("globalDefault")))
        if problem:
            errs.append(FieldError.forbidden(
                "metadata.name", f"priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use "
                                 f"only. error: {problem}"))
    elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(FieldError.forbidden(
            "value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        errs.append(FieldError.not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
    if old is not None:
        if value != old.get("value", 0):
            errs.append(FieldError.forbidden("value", "may not be changed in an update."))
        errs += immutable(policy, old.get("preemptionPolicy"), "preemptionPolicy")
    return errs


def admit_delete(name: str) -> None:
    """The priorityclasses REST's Delete: the built-in classes stay."""
    if name in SYSTEM_PRIORITY_CLASSES:
        raise errors.forbidden("priorityclasses", GROUP, name, "this is a system priority class and cannot be deleted")


PRIORITY_CLASSES = Resource(
    group=GROUP, version="v1", resource="priorityclasses", kind="PriorityClass", singular="priorityclass",
    namespaced=False, schema=ProtoSchema(scheduling_pb2.PriorityClass), short_names=("pc",),
    strategy=Declared(
        tracks_generation=True, defaults=default_priority_class, validation=validate_priority_class,
        delete_admission=admit_delete,
    ),
)

KINDS = (PRIORITY_CLASSES,)
