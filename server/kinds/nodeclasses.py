"""node.k8s.io/v1 RuntimeClass: registry entry and validation, as kube-apiserver's (pkg/apis/node/validation,
pkg/registry/node/runtimeclass).

A RuntimeClass names a CRI handler (a DNS label, immutable), what a pod of the class costs beyond its
containers (overhead.podFixed) and where such pods may run (scheduling.nodeSelector and tolerations).
Overhead is checked as kube checks it, by its ResourceRequirements validation, so a bad quantity is
reported under `overhead.limits[<resource>]`.
"""

from __future__ import annotations

from capstan.api.node.v1 import node_pb2
from server.kinds import podwarnings
from server.kinds.templates import get, immutable
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.registry.resources import Resource
from server.registry.strategy import Declared

OPERATORS = ("Equal", "Exists")
EFFECTS = ("NoExecute", "NoSchedule", "PreferNoSchedule")


def _toleration_errors(tolerations: object, path: str) -> list[FieldError]:
    """ValidateTolerations: keys are label names, Exists takes no value, effects are known, and only NoExecute
    tolerations carry tolerationSeconds."""
    errs: list[FieldError] = []
    for i, toleration in enumerate(tolerations if isinstance(tolerations, list) else []):
        if not isinstance(toleration, dict):
            continue
        at = f"{path}[{i}]"
        key, operator = toleration.get("key", ""), toleration.get("operator", "")
        if key:
            errs += names.validate_label_name(key, f"{at}.key")
        elif operator != "Exists":
            errs.append(FieldError.invalid(f"{at}.operator", operator,
                                           "operator must be Exists when `key` is empty, which means \"match all "
                                           "values and all keys\""))
        effect = toleration.get("effect", "")
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(FieldError.invalid(f"{at}.effect", effect,
                                           "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator in ("", "Equal"):
            errs += [FieldError.invalid(f"{at}.operator", toleration.get("value", ""), m)
                     for m in names.is_label_value(toleration.get("value", ""))]
        elif operator == "Exists":
            if toleration.get("value"):
                errs.append(FieldError.invalid(f"{at}.operator", toleration, "value must be empty when `operator` is "
                                                                            "'Exists'"))
        else:
            errs.append(FieldError.not_supported(f"{at}.operator", operator, OPERATORS))
        if effect and effect not in EFFECTS:
            errs.append(FieldError.not_supported(f"{at}.effect", effect, EFFECTS))
    return errs


def _overhead_errors(pod_fixed: object) -> list[FieldError]:
    """validateOverhead: each quantity non-negative (ValidateResourceQuantityValue)."""
    errs: list[FieldError] = []
    for resource, quantity in sorted((pod_fixed if isinstance(pod_fixed, dict) else {}).items()):
        if isinstance(quantity, str) and quantity.startswith("-"):
            errs.append(FieldError.invalid(f"overhead.limits[{resource}]", quantity,
                                           "must be greater than or equal to 0"))
    return errs


def validate_runtime_class(obj: Obj, old: Obj | None) -> list[FieldError]:
    """ValidateRuntimeClass and ValidateRuntimeClassUpdate."""
    handler = obj.get("handler", "")
    errs = [FieldError.invalid("handler", handler, m) for m in names.is_dns1123_label(handler)]
    errs += _overhead_errors(get(obj, "overhead", "podFixed"))
    node_selector = get(obj, "scheduling", "nodeSelector")
    if isinstance(node_selector, dict):
        errs += names.validate_labels(node_selector, "scheduling.nodeSelector")
    errs += _toleration_errors(get(obj, "scheduling", "tolerations"), "scheduling.tolerations")
    if old is not None:
        errs += immutable(handler, old.get("handler", ""), "handler")
    return errs


def runtime_class_warnings(obj: Obj, old: Obj | None) -> list[str]:
    """strategy.WarningsOnCreate/OnUpdate (GetWarningsForRuntimeClass), on every write: one warning per deprecated
    node label in scheduling.nodeSelector, worded without the label."""
    selector = get(obj, "scheduling", "nodeSelector")
    if not isinstance(selector, dict):
        return []
    return [f"scheduling.nodeSelector: {podwarnings.DEPRECATED_NODE_LABELS[label]}" for label in selector
            if label in podwarnings.DEPRECATED_NODE_LABELS]


RUNTIME_CLASSES = Resource(
    group="node.k8s.io", version="v1", resource="runtimeclasses", kind="RuntimeClass", singular="runtimeclass",
    namespaced=False, schema=ProtoSchema(node_pb2.RuntimeClass),
    strategy=Declared(validation=validate_runtime_class, warnings=runtime_class_warnings, unconditional_update=False),
)

KINDS = (RUNTIME_CLASSES,)
