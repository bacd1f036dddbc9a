"""RuntimeClass admission (plugin/pkg/admission/runtimeclass) for new Pods: a Pod naming a RuntimeClass takes the
class's pod overhead and scheduling constraints, which the scheduler and the quota then count, and a Pod naming a
class that does not exist is refused before it is stored, as kube-apiserver 1.28 refuses it.

- mutating: with `spec.runtimeClassName`, the class must exist (403 `pod rejected: RuntimeClass "x" not
  found`); its `overhead.podFixed` becomes the Pod's `spec.overhead` (a different overhead of the Pod's own is
  refused); its `scheduling.nodeSelector` is merged into the Pod's (a key the Pod gives another value is a
  conflict) and its tolerations merged with the Pod's, a toleration another one covers left out.
- validating: the Pod's overhead must be its class's, and a Pod without a class with an overhead may give none.

Only Pod creates are judged, never subresources; a write of any other kind costs one comparison.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from server.machinery import errors
from server.machinery.codec.quantity import QuantityError, parse_quantity
from server.machinery.values import Obj
from server.objects import render
from server.objects.admitting import Attributes
from server.objects.context import Context
from server.objects.storeerrors import store_call

NAME = "RuntimeClass"
_CLASS = "runtimeclass"  # the Pod's class, read once for both steps (attrs.memo)


def handles(attrs: Attributes) -> bool:
    r = attrs.resource
    return (attrs.operation == "CREATE" and attrs.obj is not None and not attrs.subresource and attrs.kind is None
            and r.group == "" and r.resource == "pods")


def _forbidden(attrs: Attributes, why: str) -> errors.ApiError:
    return errors.forbidden(attrs.resource.resource, attrs.resource.group, attrs.name, why)


async def _runtime_class(ctx: Context, attrs: Attributes) -> Obj | None:
    """The Pod's RuntimeClass, None when it names none; 403 when the one it names does not exist."""
    if _CLASS in attrs.memo:
        found = attrs.memo[_CLASS]
        assert found is None or isinstance(found, dict)
        return found
    assert attrs.obj is not None
    name = (attrs.obj.get("spec") or {}).get("runtimeClassName")
    got: Obj | None = None
    if name is not None:
        classes = ctx.registry.get("node.k8s.io", "v1", "runtimeclasses")
        read = await store_call(ctx.store.get(classes.key("", str(name)))) if classes is not None else None
        if read is None or read.kv is None:
            raise _forbidden(attrs, f'pod rejected: RuntimeClass "{name}" not found')
        got = render.load(read.kv.value)
    attrs.memo[_CLASS] = got
    return got


def _pod_fixed(runtime_class: Obj | None) -> Obj | None:
    overhead = (runtime_class or {}).get("overhead")
    return None if overhead is None else dict(overhead.get("podFixed") or {})


def _same_resources(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """apiequality.Semantic.DeepEqual of two ResourceLists: the same names, each quantity equal by value (nil and
    empty alike)."""
    a, b = a or {}, b or {}
    if a.keys() != b.keys():
        return False
    try:
        return all(parse_quantity(str(a[k])).compare(parse_quantity(str(b[k]))) == 0 for k in a)
    except QuantityError:
        return a == b


def _superset(ss: Obj, t: Obj) -> bool:
    """Whether toleration `ss` tolerates whatever `t` does (pkg/util/tolerations isSuperset)."""
    if ss == t:
        return True
    ss_key, ss_op = ss.get("key") or "", ss.get("operator") or ""
    if (t.get("key") or "") != ss_key and (ss_key != "" or ss_op != "Exists"):
        return False
    ss_effect = ss.get("effect") or ""
    if (t.get("effect") or "") != ss_effect and ss_effect != "":
        return False
    if ss_effect == "NoExecute" and ss.get("tolerationSeconds") is not None:
        seconds = t.get("tolerationSeconds")
        if seconds is None or int(seconds) > int(ss["tolerationSeconds"]):
            return False
    if ss_op in ("Equal", ""):
        return (t.get("operator") or "Equal") == "Equal" and (t.get("value") or "") == (ss.get("value") or "")
    return ss_op == "Exists"


def merge_tolerations(first: list[Obj], second: list[Obj]) -> list[Obj]:
    """MergeTolerations: both lists in order, a toleration left out when one kept or one later covers it."""
    every = [*first, *second]
    merged: list[Obj] = []
    for i, t in enumerate(every):
        if any(_superset(kept, t) for kept in merged):
            continue
        if any(later != t and _superset(later, t) for later in every[i + 1:]):
            continue
        merged.append(t)
    return merged


async def admit(ctx: Context, attrs: Attributes) -> bool:
    """The mutating step: the class's overhead and scheduling set on the Pod; True when the Pod changed."""
    runtime_class = await _runtime_class(ctx, attrs)
    if runtime_class is None:
        return False
    assert attrs.obj is not None
    spec = attrs.obj.setdefault("spec", {})
    fixed = _pod_fixed(runtime_class)
    if fixed is not None:
        if spec.get("overhead") is not None and not _same_resources(fixed, spec["overhead"]):
            raise _forbidden(attrs, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
        spec["overhead"] = fixed
    scheduling = runtime_class.get("scheduling")
    if scheduling is not None:
        wanted: Obj = dict(scheduling.get("nodeSelector") or {})
        selector = spec.get("nodeSelector")
        if selector is None:
            selector = wanted or None
        else:
            for key, value in wanted.items():
                if key in selector and selector[key] != value:
                    raise _forbidden(attrs, f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                                            f"pod.spec.nodeSelector[{key}] = {selector[key]}")
                selector[key] = value
        if selector is not None:
            spec["nodeSelector"] = selector
        merged = merge_tolerations(list(spec.get("tolerations") or []),
                                   [dict(t) for t in scheduling.get("tolerations") or []])
        if merged or spec.get("tolerations") is not None:
            spec["tolerations"] = merged
    return fixed is not None or scheduling is not None


async def validate(ctx: Context, attrs: Attributes) -> None:
    """The validating step: the Pod's overhead is its class's, or none without a class that defines one."""
    runtime_class = await _runtime_class(ctx, attrs)
    assert attrs.obj is not None
    overhead = (attrs.obj.get("spec") or {}).get("overhead")
    fixed = _pod_fixed(runtime_class)
    if fixed is not None:
        if not _same_resources(fixed, overhead):
            raise _forbidden(attrs, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    elif overhead is not None:
        raise _forbidden(attrs, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
