"""autoscaling/v2 HorizontalPodAutoscaler (hpa), and autoscaling/v1's kept in the same storage in v2 form, as
kube-apiserver 1.28 serves both (pkg/apis/autoscaling/v2/defaults.go, pkg/apis/autoscaling/validation,
pkg/registry/autoscaling/horizontalpodautoscaler): an autoscaler written through either version is read through
both, converted as server/kinds/hpaconversion.py describes.

A v2 autoscaler gets minReplicas 1 and, without metrics, 80% average CPU utilization; a behavior given is filled
with the default rules of each direction (scale up: 4 pods or 100% per 15 s, no stabilization; scale down: 100%
per 15 s), the policies chosen by Max.
"""

from __future__ import annotations

from capstan.api.autoscaling.v1 import autoscaling_pb2 as v1_pb2
from capstan.api.autoscaling.v2 import autoscaling_v2_pb2 as v2_pb2
from server.kinds import hpaconversion, shaped
from server.kinds.templates import nonnegative, retyped
from server.machinery.codec.quantity import QuantityError, parse_quantity
from server.machinery.schema import ProtoSchema
from server.machinery.validation import names
from server.machinery.validation.names import FieldError
from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import list_of as _list
from server.machinery.values import text_of as _text
from server.registry.resources import Resource, StoredAs, Subresource
from server.registry.strategy import Declared

DEFAULT_CPU_UTILIZATION = 80
METRIC_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
TARGET_TYPES = ("Utilization", "Value", "AverageValue")
SELECT_POLICIES = ("Disabled", "Max", "Min")
POLICY_TYPES = ("Percent", "Pods")
MAX_STABILIZATION_SECONDS = 3600
MAX_PERIOD_SECONDS = 1800


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# -- defaults ------------------------------------------------------------------------------------------------------


def _rules(given: object, default: Obj) -> Obj:
    """copyHPAScalingRules: the given rules' set fields over the defaults."""
    rules = {k: (list(v) if isinstance(v, list) else v) for k, v in default.items()}
    for field, value in _dict(given).items():
        if value is not None:
            rules[field] = value
    return rules


SCALE_UP_RULES: Obj = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
SCALE_DOWN_RULES: Obj = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def default_v2(obj: Obj) -> None:
    """SetDefaults_HorizontalPodAutoscaler, SetDefaults_HorizontalPodAutoscalerBehavior."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not _list(spec.get("metrics")):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION},
                },
            }
        ]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _rules(behavior.get("scaleUp"), SCALE_UP_RULES)
        behavior["scaleDown"] = _rules(behavior.get("scaleDown"), SCALE_DOWN_RULES)


def default_v1(obj: Obj) -> None:
    """autoscaling/v1's SetDefaults_HorizontalPodAutoscaler: minReplicas 1."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1


# -- validation ----------------------------------------------------------------------------------------------------


def _reference_errors(ref: Obj, path: str) -> list[FieldError]:
    """ValidateCrossVersionObjectReference."""
    errs: list[FieldError] = []
    for field in ("kind", "name"):
        value = _text(ref.get(field))
        if not value:
            errs.append(FieldError.required(f"{path}.{field}"))
        else:
            errs += [FieldError.invalid(f"{path}.{field}", value, m) for m in names.is_path_segment_name(value)]
    return errs


def _positive(quantity: object) -> bool:
    """Quantity.Sign() == 1 (a stored quantity was parsed on the way in)."""
    try:
        return parse_quantity(_text(quantity)).sign() == 1
    except QuantityError:
        return False


def _target_errors(target: Obj, path: str) -> list[FieldError]:
    """validateMetricTarget."""
    errs: list[FieldError] = []
    kind = _text(target.get("type"))
    if not kind:
        errs.append(FieldError.required(f"{path}.type", "must specify a metric target type"))
    if kind not in TARGET_TYPES:
        errs.append(FieldError.invalid(f"{path}.type", kind, "must be either Utilization, Value, or AverageValue"))
    for field in ("value", "averageValue"):
        value = target.get(field)
        if value is not None and not _positive(value):
            errs.append(FieldError.invalid(f"{path}.{field}", names.GoValue(_text(value)), "must be positive"))
    utilization = _int(target.get("averageUtilization"))
    if utilization is not None and utilization < 1:
        errs.append(FieldError.invalid(f"{path}.averageUtilization", utilization, "must be greater than 0"))
    return errs


def _identifier_errors(metric: Obj, path: str) -> list[FieldError]:
    """validateMetricIdentifier."""
    name = _text(metric.get("name"))
    if not name:
        return [FieldError.required(f"{path}.name", "must specify a metric name")]
    return [FieldError.invalid(f"{path}.name", name, m) for m in names.is_dns1123_subdomain(name)]


def _source_errors(kind: str, src: Obj, path: str) -> list[FieldError]:
    """validateObjectSource, validatePodsSource, validateResourceSource, validateContainerResourceSource,
    validateExternalSource."""
    target = _dict(src.get("target"))
    errs: list[FieldError] = []
    if kind == "object":
        errs += _reference_errors(_dict(src.get("describedObject")), f"{path}.describedObject")
        errs += _identifier_errors(_dict(src.get("metric")), f"{path}.metric") + _target_errors(
            target, f"{path}.target"
        )
        if target.get("value") is None and target.get("averageValue") is None:
            errs.append(FieldError.required(f"{path}.target.value", "must set either a target value or averageValue"))
    elif kind == "pods":
        errs += _identifier_errors(_dict(src.get("metric")), f"{path}.metric") + _target_errors(
            target, f"{path}.target"
        )
        if target.get("averageValue") is None:
            errs.append(
                FieldError.required(f"{path}.target.averageValue", "must specify a positive target averageValue")
            )
    elif kind == "external":
        errs += _identifier_errors(_dict(src.get("metric")), f"{path}.metric") + _target_errors(
            target, f"{path}.target"
        )
        if target.get("value") is None and target.get("averageValue") is None:
            errs.append(
                FieldError.required(
                    f"{path}.target.value", "must set either a target value for metric or a per-pod target"
                )
            )
        if target.get("value") is not None and target.get("averageValue") is not None:
            errs.append(
                FieldError.forbidden(
                    f"{path}.target.value", "may not set both a target value for metric and a per-pod target"
                )
            )
    else:  # resource, containerResource
        if not _text(src.get("name")):
            errs.append(FieldError.required(f"{path}.name", "must specify a resource name"))
        if kind == "containerResource" and not _text(src.get("container")):
            errs.append(FieldError.required(f"{path}.container", "must specify a container"))
        errs += _target_errors(target, f"{path}.target")
        utilization, average = target.get("averageUtilization"), target.get("averageValue")
        if utilization is None and average is None:
            errs.append(
                FieldError.required(
                    f"{path}.target.averageUtilization", "must set either a target raw value or a target utilization"
                )
            )
        if utilization is not None and average is not None:
            errs.append(
                FieldError.forbidden(
                    f"{path}.target.averageValue", "may not set both a target raw value and a target utilization"
                )
            )
    return errs


SOURCE_FIELDS = ("object", "pods", "resource", "containerResource", "external")


def _metric_errors(spec: Obj, path: str) -> list[FieldError]:
    """validateMetricSpec."""
    errs: list[FieldError] = []
    kind = _text(spec.get("type"))
    if not kind:
        errs.append(FieldError.required(f"{path}.type", "must specify a metric source type"))
    if kind not in METRIC_TYPES:
        errs.append(FieldError.not_supported(f"{path}.type", kind, METRIC_TYPES))
    present = [f for f in SOURCE_FIELDS if isinstance(spec.get(f), dict)]
    if len(present) == 1:
        errs += _source_errors(present[0], spec[present[0]], f"{path}.{present[0]}")
    expected = kind[:1].lower() + kind[1:]
    if expected not in present:
        errs.append(FieldError.required(f"{path}.{expected}", "must populate information for the given metric source"))
    if len(present) != 1:
        errs += [
            FieldError.forbidden(f"{path}.{f}", "must populate the given metric source only")
            for f in sorted(present)
            if f != expected
        ]
    return errs


def _scaling_rules_errors(rules: object, path: str) -> list[FieldError]:
    """validateScalingRules."""
    if not isinstance(rules, dict):
        return []
    errs: list[FieldError] = []
    window = _int(rules.get("stabilizationWindowSeconds"))
    if window is not None and window < 0:
        errs.append(
            FieldError.invalid(f"{path}.stabilizationWindowSeconds", window, "must be greater than or equal to zero")
        )
    if window is not None and window > MAX_STABILIZATION_SECONDS:
        errs.append(
            FieldError.invalid(
                f"{path}.stabilizationWindowSeconds",
                window,
                f"must be less than or equal to {MAX_STABILIZATION_SECONDS}",
            )
        )
    select = rules.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        errs.append(FieldError.not_supported(f"{path}.selectPolicy", select, SELECT_POLICIES))
    policies = _list(rules.get("policies"))
    if not policies:
        errs.append(FieldError.required(f"{path}.policies", "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        policy, ppath = _dict(policy), f"{path}.policies[{i}]"
        if policy.get("type") not in POLICY_TYPES:
            errs.append(FieldError.not_supported(f"{ppath}.type", _text(policy.get("type")), POLICY_TYPES))
        value = _int(policy.get("value")) or 0
        if value <= 0:
            errs.append(FieldError.invalid(f"{ppath}.value", value, "must be greater than zero"))
        period = _int(policy.get("periodSeconds")) or 0
        if period <= 0:
            errs.append(FieldError.invalid(f"{ppath}.periodSeconds", period, "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            errs.append(
                FieldError.invalid(
                    f"{ppath}.periodSeconds", period, f"must be less than or equal to {MAX_PERIOD_SECONDS}"
                )
            )
    return errs


def _spec_errors(spec: Obj) -> list[FieldError]:
    """validateHorizontalPodAutoscalerSpec (HPAScaleToZero off: minReplicas at least 1)."""
    errs: list[FieldError] = []
    minimum, maximum = _int(spec.get("minReplicas")), _int(spec.get("maxReplicas")) or 0
    if minimum is not None and minimum < 1:
        errs.append(FieldError.invalid("spec.minReplicas", minimum, "must be greater than or equal to 1"))
    if maximum < 1:
        errs.append(FieldError.invalid("spec.maxReplicas", maximum, "must be greater than 0"))
    if minimum is not None and maximum < minimum:
        errs.append(FieldError.invalid("spec.maxReplicas", maximum, "must be greater than or equal to `minReplicas`"))
    errs += _reference_errors(_dict(spec.get("scaleTargetRef")), "spec.scaleTargetRef")
    metrics = _list(spec.get("metrics"))
    for i, metric in enumerate(metrics):
        errs += _metric_errors(_dict(metric), f"spec.metrics[{i}]")
    if minimum == 0 and not any(_dict(m).get("type") in ("Object", "External") for m in metrics):
        errs.append(FieldError.forbidden(
            "spec.metrics", "must specify at least one Object or External metric to support scaling to zero replicas"))
    behavior = _dict(spec.get("behavior"))
    errs += _scaling_rules_errors(behavior.get("scaleUp"), "spec.behavior.scaleUp")
    errs += _scaling_rules_errors(behavior.get("scaleDown"), "spec.behavior.scaleDown")
    return errs


def validate_v2(obj: Obj, old: Obj | None) -> list[FieldError]:
    status = _dict(obj.get("status"))
    return (
        _spec_errors(_dict(obj.get("spec")))
        + nonnegative(status.get("currentReplicas"), "status.currentReplicas")
        + nonnegative(status.get("desiredReplicas"), "status.desiredReplicas")
    )


def validate_v1(obj: Obj, old: Obj | None) -> list[FieldError]:
    """Kube validates the internal (v2) form, whichever version was written: paths are v2's."""
    return validate_v2(hpaconversion.to_v2(obj), None if old is None else hpaconversion.to_v2(old))


V2_SCHEMA = ProtoSchema(v2_pb2.HorizontalPodAutoscaler)
V1_SCHEMA = ProtoSchema(v1_pb2.HorizontalPodAutoscaler)


def _to_storage(obj: Obj) -> Obj:
    stored = hpaconversion.to_v2(obj)
    default_v2(stored)
    typed, _ = V2_SCHEMA.normalize(stored)
    return typed


def _from_storage(obj: Obj) -> Obj:
    typed, _ = V1_SCHEMA.normalize(hpaconversion.to_v1(obj))
    return typed


def _prepare_v2(obj: Obj, old: Obj | None) -> None:
    """horizontalPodAutoscalerStrategy.PrepareForCreate: a new HPA's status is the zero struct, which Go prints
    as {"currentMetrics": null, "desiredReplicas": 0}."""
    if old is None:
        obj["status"] = {"desiredReplicas": 0}  # an int32 without omitempty: printed though zero
        shaped.retype(V2_SCHEMA, obj)


def _status(kind: str) -> Subresource:
    # horizontalPodAutoscalerStatusStrategy keeps the request's metadata and the stored spec.
    return Subresource("status", kind, ("get", "patch", "update"), ("status",), metadata_reset=())


HORIZONTAL_POD_AUTOSCALERS_V2 = Resource(
    group="autoscaling",
    version="v2",
    resource="horizontalpodautoscalers",
    kind="HorizontalPodAutoscaler",
    singular="horizontalpodautoscaler",
    namespaced=True,
    schema=V2_SCHEMA,
    short_names=("hpa",),
    categories=("all",),
    subresources=(_status("HorizontalPodAutoscaler"),),
    strategy=Declared(defaults=retyped(V2_SCHEMA, default_v2), prepare=_prepare_v2, validation=validate_v2),
)

HORIZONTAL_POD_AUTOSCALERS_V1 = Resource(
    group="autoscaling",
    version="v1",
    resource="horizontalpodautoscalers",
    kind="HorizontalPodAutoscaler",
    singular="horizontalpodautoscaler",
    namespaced=True,
    schema=V1_SCHEMA,
    short_names=("hpa",),
    categories=("all",),
    subresources=(_status("HorizontalPodAutoscaler"),),
    storage_group_version="autoscaling/v2",
    stored_as=StoredAs(
        group="autoscaling",
        resource="horizontalpodautoscalers",
        schema=V2_SCHEMA,
        to_storage=_to_storage,
        from_storage=_from_storage,
    ),
    strategy=Declared(defaults=retyped(V1_SCHEMA, default_v1), validation=validate_v1),
)

# v2 first: kube-apiserver's preferred autoscaling version, which discovery lists first.
KINDS = (HORIZONTAL_POD_AUTOSCALERS_V2, HORIZONTAL_POD_AUTOSCALERS_V1)
