"""HorizontalPodAutoscaler between autoscaling/v1 and its stored autoscaling/v2 form, as kube-apiserver 1.28
converts it (pkg/apis/autoscaling/v1/conversion.go, pkg/apis/autoscaling/annotations.go).

v1 has one metric: spec.targetCPUUtilizationPercentage is v2's Resource cpu Utilization metric, and
status.currentCPUUtilizationPercentage its current utilization. What v1 cannot say travels in annotations, as
JSON of v1's MetricSpec, MetricStatus and HorizontalPodAutoscalerCondition types (v2beta1-shaped:
`{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}`) and of the internal behavior type
(Go field names, no JSON tags: `{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max",...}}`):

    autoscaling.alpha.kubernetes.io/metrics           spec.metrics other than CPU utilization
    autoscaling.alpha.kubernetes.io/current-metrics   status.currentMetrics (all of them)
    autoscaling.alpha.kubernetes.io/conditions        status.conditions
    autoscaling.alpha.kubernetes.io/behavior          spec.behavior

Reading v1 writes them (replacing any a client sent); writing v1 reads them into the v2 form and drops them, so a
v2 autoscaler round-trips through v1 unchanged. A v1 autoscaler without a CPU target or other metrics gets 80%
CPU utilization, as the conversion applies v1's former implicit default.
"""

from __future__ import annotations

import json
from typing import Any

from server.machinery import errors
from server.machinery.values import Obj
from server.machinery.values import dict_of as _dict
from server.machinery.values import list_of as _list

METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
ROUND_TRIP = (METRICS, BEHAVIOR, CURRENT_METRICS, CONDITIONS)
DEFAULT_CPU_UTILIZATION = 80
ZERO = "0"  # a Go non-pointer Quantity's zero value


def _set(out: Obj, key: str, value: object) -> Obj:
    """out with key set when value is not None (a Go pointer with omitempty)."""
    if value is not None:
        out[key] = value
    return out


def _go_json(value: object) -> str:
    """json.Marshal's compact output, HTML characters escaped as Go escapes them."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _reference(ref: object) -> Obj:
    ref = _dict(ref)
    return _set({"kind": ref.get("kind", ""), "name": ref.get("name", "")}, "apiVersion", ref.get("apiVersion") or None)


# -- v2 -> v1 (reading through v1) -----------------------------------------------------------------------------------


def _metric_to_v1(metric: Obj) -> Obj:
    """Convert_autoscaling_MetricSpec_To_v1_MetricSpec."""
    out: Obj = {"type": metric.get("type", "")}
    if isinstance(src := metric.get("object"), dict):
        target, ident = _dict(src.get("target")), _dict(src.get("metric"))
        out["object"] = _set(
            _set(
                {
                    "target": _reference(src.get("describedObject")),
                    "metricName": ident.get("name", ""),
                    "targetValue": target.get("value") or ZERO,
                },
                "selector",
                ident.get("selector"),
            ),
            "averageValue",
            target.get("averageValue"),
        )
    if isinstance(src := metric.get("pods"), dict):
        target, ident = _dict(src.get("target")), _dict(src.get("metric"))
        out["pods"] = _set(
            {"metricName": ident.get("name", ""), "targetAverageValue": target.get("averageValue") or ZERO},
            "selector",
            ident.get("selector"),
        )
    for field in ("resource", "containerResource"):
        if isinstance(src := metric.get(field), dict):
            target = _dict(src.get("target"))
            converted = _set(
                _set({"name": src.get("name", "")}, "targetAverageUtilization", target.get("averageUtilization")),
                "targetAverageValue",
                target.get("averageValue"),
            )
            if field == "containerResource":
                converted["container"] = src.get("container", "")
            out[field] = converted
    if isinstance(src := metric.get("external"), dict):
        target, ident = _dict(src.get("target")), _dict(src.get("metric"))
        out["external"] = _set(
            _set(
                _set({"metricName": ident.get("name", "")}, "metricSelector", ident.get("selector")),
                "targetValue",
                target.get("value"),
            ),
            "targetAverageValue",
            target.get("averageValue"),
        )
    return out


def _status_to_v1(metric: Obj) -> Obj:
    """Convert_autoscaling_MetricStatus_To_v1_MetricStatus."""
    out: Obj = {"type": metric.get("type", "")}
    if isinstance(src := metric.get("object"), dict):
        current, ident = _dict(src.get("current")), _dict(src.get("metric"))
        out["object"] = _set(
            _set(
                {
                    "target": _reference(src.get("describedObject")),
                    "metricName": ident.get("name", ""),
                    "currentValue": current.get("value") or ZERO,
                },
                "selector",
                ident.get("selector"),
            ),
            "averageValue",
            current.get("averageValue"),
        )
    if isinstance(src := metric.get("pods"), dict):
        current, ident = _dict(src.get("current")), _dict(src.get("metric"))
        out["pods"] = _set(
            {"metricName": ident.get("name", ""), "currentAverageValue": current.get("averageValue") or ZERO},
            "selector",
            ident.get("selector"),
        )
    for field in ("resource", "containerResource"):
        if isinstance(src := metric.get(field), dict):
            current = _dict(src.get("current"))
            converted = _set(
                {"name": src.get("name", "")}, "currentAverageUtilization", current.get("averageUtilization")
            )
            converted["currentAverageValue"] = current.get("averageValue") or ZERO
            if field == "containerResource":
                converted["container"] = src.get("container", "")
            out[field] = converted
    if isinstance(src := metric.get("external"), dict):
        current, ident = _dict(src.get("current")), _dict(src.get("metric"))
        out["external"] = _set(
            _set({"metricName": ident.get("name", "")}, "metricSelector", ident.get("selector")),
            "currentValue",
            current.get("value") or ZERO,
        )
        _set(out["external"], "currentAverageValue", current.get("averageValue"))
    return out


def _condition(condition: object) -> Obj:
    """A HorizontalPodAutoscalerCondition as Go marshals it (both versions have the same fields)."""
    c = _dict(condition)
    out: Obj = {
        "type": c.get("type", ""),
        "status": c.get("status", ""),
        "lastTransitionTime": c.get("lastTransitionTime") or None,
    }
    return _set(_set(out, "reason", c.get("reason") or None), "message", c.get("message") or None)


def _rules_internal(rules: object) -> Obj | None:
    if not isinstance(rules, dict):
        return None
    policies = rules.get("policies")
    return {
        "StabilizationWindowSeconds": rules.get("stabilizationWindowSeconds"),
        "SelectPolicy": rules.get("selectPolicy"),
        "Policies": None
        if policies is None
        else [
            {
                "Type": _dict(p).get("type", ""),
                "Value": _dict(p).get("value", 0),
                "PeriodSeconds": _dict(p).get("periodSeconds", 0),
            }
            for p in _list(policies)
        ],
    }


def to_v1(obj: Obj) -> Obj:
    """Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler, from the stored v2 form."""
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    metadata = dict(_dict(obj.get("metadata")))
    annotations = {k: v for k, v in _dict(metadata.get("annotations")).items() if k not in ROUND_TRIP}
    metrics = [_dict(m) for m in _list(spec.get("metrics"))]
    v1_spec: Obj = {"scaleTargetRef": _reference(spec.get("scaleTargetRef"))}
    _set(v1_spec, "minReplicas", spec.get("minReplicas"))
    v1_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    for metric in metrics:
        resource = metric.get("resource")
        if metric.get("type") == "Resource" and isinstance(resource, dict) and resource.get("name") == "cpu":
            _set(v1_spec, "targetCPUUtilizationPercentage", _dict(resource.get("target")).get("averageUtilization"))
            break
    others = [
        _metric_to_v1(m)
        for m in metrics
        if not (
            m.get("type") == "Resource"
            and isinstance(m.get("resource"), dict)
            and m["resource"].get("name") == "cpu"
            and _dict(m["resource"].get("target")).get("averageUtilization") is not None
        )
    ]
    current = [_dict(m) for m in _list(status.get("currentMetrics"))]
    v1_status: Obj = {}
    _set(v1_status, "observedGeneration", status.get("observedGeneration"))
    _set(v1_status, "lastScaleTime", status.get("lastScaleTime"))
    v1_status["currentReplicas"] = status.get("currentReplicas", 0)
    v1_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    for metric in current:
        resource = metric.get("resource")
        if metric.get("type") == "Resource" and isinstance(resource, dict) and resource.get("name") == "cpu":
            _set(v1_status, "currentCPUUtilizationPercentage", _dict(resource.get("current")).get("averageUtilization"))
    if others:
        annotations[METRICS] = _go_json(others)
    if current:
        annotations[CURRENT_METRICS] = _go_json([_status_to_v1(m) for m in current])
    if conditions := _list(status.get("conditions")):
        annotations[CONDITIONS] = _go_json([_condition(c) for c in conditions])
    if isinstance(behavior := spec.get("behavior"), dict):
        annotations[BEHAVIOR] = _go_json(
            {
                "ScaleUp": _rules_internal(behavior.get("scaleUp")),
                "ScaleDown": _rules_internal(behavior.get("scaleDown")),
            }
        )
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    return {"metadata": metadata, "spec": v1_spec, "status": v1_status}


# -- v1 -> v2 (writing through v1) -----------------------------------------------------------------------------------


def _identifier(name: object, selector: object) -> Obj:
    return _set({"name": name if isinstance(name, str) else ""}, "selector", selector)


def _metric_to_v2(metric: Obj) -> Obj:
    """Convert_v1_MetricSpec_To_autoscaling_MetricSpec."""
    out: Obj = {"type": metric.get("type", "")}
    if isinstance(src := metric.get("object"), dict):
        average = src.get("averageValue")
        out["object"] = {
            "describedObject": _reference(src.get("target")),
            "target": _set(
                {"type": "Value" if average is None else "AverageValue", "value": src.get("targetValue") or ZERO},
                "averageValue",
                average,
            ),
            "metric": _identifier(src.get("metricName"), src.get("selector")),
        }
    if isinstance(src := metric.get("pods"), dict):
        out["pods"] = {
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "target": {"type": "AverageValue", "averageValue": src.get("targetAverageValue") or ZERO},
        }
    for field in ("resource", "containerResource"):
        if isinstance(src := metric.get(field), dict):
            utilization = src.get("targetAverageUtilization")
            target = _set(
                _set(
                    {"type": "AverageValue" if utilization is None else "Utilization"},
                    "averageValue",
                    src.get("targetAverageValue"),
                ),
                "averageUtilization",
                utilization,
            )
            converted: Obj = {"name": src.get("name", ""), "target": target}
            if field == "containerResource":
                converted["container"] = src.get("container", "")
            out[field] = converted
    if isinstance(src := metric.get("external"), dict):
        value = src.get("targetValue")
        out["external"] = {
            "metric": _identifier(src.get("metricName"), src.get("metricSelector")),
            "target": _set(
                _set({"type": "AverageValue" if value is None else "Value"}, "value", value),
                "averageValue",
                src.get("targetAverageValue"),
            ),
        }
    return out


def _status_to_v2(metric: Obj) -> Obj:
    """Convert_v1_MetricStatus_To_autoscaling_MetricStatus."""
    out: Obj = {"type": metric.get("type", "")}
    if isinstance(src := metric.get("object"), dict):
        out["object"] = {
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "current": _set({"value": src.get("currentValue") or ZERO}, "averageValue", src.get("averageValue")),
            "describedObject": _reference(src.get("target")),
        }
    if isinstance(src := metric.get("pods"), dict):
        out["pods"] = {
            "metric": _identifier(src.get("metricName"), src.get("selector")),
            "current": {"averageValue": src.get("currentAverageValue") or ZERO},
        }
    for field in ("resource", "containerResource"):
        if isinstance(src := metric.get(field), dict):
            current = _set(
                {"averageValue": src.get("currentAverageValue") or ZERO},
                "averageUtilization",
                src.get("currentAverageUtilization"),
            )
            converted: Obj = {"name": src.get("name", ""), "current": current}
            if field == "containerResource":
                converted["container"] = src.get("container", "")
            out[field] = converted
    if isinstance(src := metric.get("external"), dict):
        out["external"] = {
            "metric": _identifier(src.get("metricName"), src.get("metricSelector")),
            "current": _set({"value": src.get("currentValue") or ZERO}, "averageValue", src.get("currentAverageValue")),
        }
    return out


def _folded(value: object) -> dict[str, Any]:
    """A JSON object's keys lower-cased: encoding/json matches field names case-insensitively."""
    return {k.lower(): v for k, v in value.items()} if isinstance(value, dict) else {}


def _rules_v2(rules: object) -> Obj | None:
    if not isinstance(rules, dict):
        return None
    folded = _folded(rules)
    out: Obj = {}
    _set(out, "stabilizationWindowSeconds", folded.get("stabilizationwindowseconds"))
    _set(out, "selectPolicy", folded.get("selectpolicy"))
    policies = folded.get("policies")
    if isinstance(policies, list):
        out["policies"] = [
            {"type": p.get("type", ""), "value": p.get("value", 0), "periodSeconds": p.get("periodseconds", 0)}
            for p in map(_folded, policies)
        ]
    return out


def _annotation(annotations: Obj, key: str) -> Any:
    """An annotation's JSON; a value that is not JSON fails the conversion, as it does in kube's decoder."""
    try:
        return json.loads(annotations[key])
    except (TypeError, ValueError) as err:
        raise errors.bad_request(f"error decoding annotation {key}: {err}") from None


def to_v2(obj: Obj) -> Obj:
    """Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler."""
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    metadata = dict(_dict(obj.get("metadata")))
    annotations = dict(_dict(metadata.get("annotations")))
    v2_spec: Obj = {"scaleTargetRef": _reference(spec.get("scaleTargetRef"))}
    _set(v2_spec, "minReplicas", spec.get("minReplicas"))
    v2_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    metrics: list[Obj] = []
    if (cpu := spec.get("targetCPUUtilizationPercentage")) is not None:
        metrics = [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu}},
            }
        ]
    if METRICS in annotations:
        metrics = [_metric_to_v2(_dict(m)) for m in _list(_annotation(annotations, METRICS))] + metrics
        del annotations[METRICS]
    v2_status: Obj = {}
    _set(v2_status, "observedGeneration", status.get("observedGeneration"))
    _set(v2_status, "lastScaleTime", status.get("lastScaleTime"))
    _set(v2_status, "currentReplicas", status.get("currentReplicas"))
    v2_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    if (current := status.get("currentCPUUtilizationPercentage")) is not None:
        v2_status["currentMetrics"] = [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": current}}}
        ]
    if CURRENT_METRICS in annotations:
        v2_status["currentMetrics"] = [
            _status_to_v2(_dict(m)) for m in _list(_annotation(annotations, CURRENT_METRICS))
        ]
        del annotations[CURRENT_METRICS]
    if not metrics:
        metrics = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION},
                },
            }
        ]
    v2_spec["metrics"] = metrics
    if BEHAVIOR in annotations:
        behavior = _folded(_annotation(annotations, BEHAVIOR))
        up, down = _rules_v2(behavior.get("scaleup")), _rules_v2(behavior.get("scaledown"))
        if up is not None or down is not None:
            v2_spec["behavior"] = _set(_set({}, "scaleUp", up), "scaleDown", down)
        del annotations[BEHAVIOR]
    if CONDITIONS in annotations:
        v2_status["conditions"] = [
            {k: v for k, v in _condition(c).items() if v is not None}
            for c in _list(_annotation(annotations, CONDITIONS))
        ]
        del annotations[CONDITIONS]
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    return {"metadata": metadata, "spec": v2_spec, "status": v2_status}
