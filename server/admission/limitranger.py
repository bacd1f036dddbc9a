"""LimitRanger admission (plugin/pkg/admission/limitranger): the namespace's LimitRanges default and bound
what Pods and PersistentVolumeClaims ask for.

A new Pod's containers and init containers get the `default` (limits) and `defaultRequest` (requests) of
every Container item for what they leave unset, recorded in the `kubernetes.io/limit-ranger` annotation
("LimitRanger plugin set: cpu request for container app; ..."). Then Container items bound each container,
Pod items the Pod's totals (containers summed, at least any init container) and PersistentVolumeClaim items a
claim's storage request (on create and update): min, max and maxLimitRequestRatio, every violation of every
range in one 403 with kube's words (several as `[a, b]`). Pod updates are not checked (containers' resources
cannot change), nor objects already being deleted.
"""

from __future__ import annotations

from server.admission.quantities import ResourceList, milli, parse, value
from server.admission.usage import pod_totals
from server.machinery import errors, meta
from server.machinery.codec.quantity import Quantity
from server.machinery.values import Obj
from server.objects import render
from server.objects.context import Context
from server.objects.storeerrors import store_call
from server.registry.resources import Resource

ANNOTATION = "kubernetes.io/limit-ranger"
MAX_MILLI_VALUE = ((1 << 63) - 1) // 1000  # resource.MaxMilliValue


async def ranges_in(ctx: Context, namespace: str) -> list[Obj]:
    page = await store_call(ctx.store.list(f"/core/limitranges/{namespace}/".encode()))
    return [render.load(kv.value) for kv in page.kvs]


def _items(ranges: list[Obj]) -> list[Obj]:
    return [item for r in ranges for item in (r.get("spec") or {}).get("limits") or []]


def mutate_pod(pod: Obj, ranges: list[Obj]) -> bool:
    """mergePodResourceRequirements: fill unset requests and limits; True when anything was set."""
    limits: dict[str, str] = {}
    requests: dict[str, str] = {}
    for item in _items(ranges):
        if item.get("type") == "Container":
            requests.update(item.get("defaultRequest") or {})
            limits.update(item.get("default") or {})
    notes: list[str] = []
    spec = pod.get("spec") or {}
    for field, label in (("containers", "container"), ("initContainers", "init container")):
        for container in spec.get(field) or []:
            resources = container.setdefault("resources", {})
            set_limits = _fill(resources.setdefault("limits", {}), limits)
            set_requests = _fill(resources.setdefault("requests", {}), requests)
            if set_requests:
                notes.append(f"{', '.join(set_requests)} request for {label} {container.get('name', '')}")
            if set_limits:
                notes.append(f"{', '.join(set_limits)} limit for {label} {container.get('name', '')}")
            for which in ("limits", "requests"):
                if not resources[which]:
                    del resources[which]
    if not notes:
        return False
    annotations = meta.meta(pod).setdefault("annotations", {})
    annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
    return True


def _fill(target: dict[str, str], defaults: dict[str, str]) -> list[str]:
    added = sorted(name for name in defaults if name not in target)
    for name in added:
        target[name] = defaults[name]
    return added


def _enforced(req: Quantity | None, lim: Quantity | None, bound: Quantity) -> tuple[int, int, int]:
    """requestLimitEnforcedValues: whole values, or thousandths when none would overflow."""
    values = [value(q) if q is not None else 0 for q in (req, lim, bound)]
    if all(v <= MAX_MILLI_VALUE for v in values):
        values = [milli(q) if q is not None else 0 for q in (req, lim, bound)]
    return values[0], values[1], values[2]


def _min(kind: str, name: str, bound: Quantity, requests: ResourceList, limits: ResourceList) -> str:
    req, lim = requests.get(name), limits.get(name)
    r, li, b = _enforced(req, lim, bound)
    if req is None:
        return f"minimum {name} usage per {kind} is {bound}.  No request is specified"
    if r < b:
        return f"minimum {name} usage per {kind} is {bound}, but request is {req}"
    if lim is not None and li < b:
        return f"minimum {name} usage per {kind} is {bound}, but limit is {lim}"
    return ""


def _max(kind: str, name: str, bound: Quantity, requests: ResourceList, limits: ResourceList) -> str:
    req, lim = requests.get(name), limits.get(name)
    r, li, b = _enforced(req, lim, bound)
    if lim is None:
        return f"maximum {name} usage per {kind} is {bound}.  No limit is specified"
    if li > b:
        return f"maximum {name} usage per {kind} is {bound}, but limit is {lim}"
    if req is not None and r > b:
        return f"maximum {name} usage per {kind} is {bound}, but request is {req}"
    return ""


def _max_request(kind: str, name: str, bound: Quantity, requests: ResourceList) -> str:
    req = requests.get(name)
    r, _, b = _enforced(req, None, bound)
    if req is None:
        return f"maximum {name} usage per {kind} is {bound}.  No request is specified"
    if r > b:
        return f"maximum {name} usage per {kind} is {bound}, but request is {req}"
    return ""


def _ratio(kind: str, name: str, bound: Quantity, requests: ResourceList, limits: ResourceList) -> str:
    req, lim = requests.get(name), limits.get(name)
    r, li, _ = _enforced(req, lim, bound)
    if req is None or r == 0:
        return f"{name} max limit to request ratio per {kind} is {bound}, but no request is specified or request is 0"
    if lim is None or li == 0:
        return f"{name} max limit to request ratio per {kind} is {bound}, but no limit is specified or limit is 0"
    observed = li / r
    shown = observed
    enforced = float(value(bound))
    if value(bound) <= MAX_MILLI_VALUE:
        observed, enforced = observed * 1000, float(milli(bound))
    if observed > enforced:
        return f"{name} max limit to request ratio per {kind} is {bound}, but provided ratio is {shown:f}"
    return ""


def _bounds(item: Obj, kind: str, requests: ResourceList, limits: ResourceList) -> list[str]:
    found = [_min(kind, n, q, requests, limits) for n, q in sorted(parse(item.get("min")).items())]
    found += [_max(kind, n, q, requests, limits) for n, q in sorted(parse(item.get("max")).items())]
    found += [_ratio(kind, n, q, requests, limits)
              for n, q in sorted(parse(item.get("maxLimitRequestRatio")).items())]
    return [f for f in found if f]


def pod_violations(pod: Obj, ranges: list[Obj]) -> list[str]:
    spec = pod.get("spec") or {}
    found: list[str] = []
    for item in _items(ranges):
        kind = item.get("type")
        if kind == "Container":
            for container in (*(spec.get("containers") or []), *(spec.get("initContainers") or [])):
                resources = container.get("resources") or {}
                found += _bounds(item, "Container", parse(resources.get("requests")), parse(resources.get("limits")))
        elif kind == "Pod":
            found += _bounds(item, "Pod", pod_totals(spec, "requests"), pod_totals(spec, "limits"))
    return found


def claim_violations(pvc: Obj, ranges: list[Obj]) -> list[str]:
    requests = parse(((pvc.get("spec") or {}).get("resources") or {}).get("requests"))
    found: list[str] = []
    for item in _items(ranges):
        if item.get("type") == "PersistentVolumeClaim":
            found += [_min("PersistentVolumeClaim", n, q, requests, {})
                      for n, q in sorted(parse(item.get("min")).items())]
            found += [_max_request("PersistentVolumeClaim", n, q, requests)
                      for n, q in sorted(parse(item.get("max")).items())]
    return [f for f in found if f]


def refuse(resource: Resource, obj: Obj, violations: list[str]) -> None:
    """utilerrors.NewAggregate's wording: one error as is, several as [a, b]."""
    if violations:
        reason = violations[0] if len(violations) == 1 else "[" + ", ".join(violations) + "]"
        raise errors.forbidden(resource.resource, resource.group, meta.meta(obj).get("name") or "", reason)


def validate(resource: Resource, obj: Obj, old: Obj | None, ranges: list[Obj]) -> None:
    if old is not None and meta.meta(old).get("deletionTimestamp"):
        return
    if resource.resource == "pods" and old is None:
        refuse(resource, obj, pod_violations(obj, ranges))
    elif resource.resource == "persistentvolumeclaims":
        refuse(resource, obj, claim_violations(obj, ranges))
