"""Priority admission (plugin/pkg/admission/priority): a Pod's priority and preemption policy are its
PriorityClass's, which the scheduler's preemption reads.

- A Pod naming a PriorityClass gets its value and preemptionPolicy; a class that does not exist is kube's 403
  `no PriorityClass with name <name> was found`.
- A Pod naming none gets the global default class (globalDefault: true; the lowest value if several), its name
  included, or priority 0 and PreemptLowerPriority when there is none.
- A Pod that gives a priority or preemption policy of its own other than the class's is refused, with kube's
  words. Mirror Pods are judged as any other, as kube judges them.
- An updated Pod that leaves its priority or preemption policy out keeps the stored one (validation forbids
  changing either), so a Pod replaced from the manifest it was created from is accepted, as kube accepts it.
- One PriorityClass at most is the global default: creating a second, or marking another one so, is kube's 403
  `PriorityClass <name> is already marked as default. Only one default can exist`.
"""

from __future__ import annotations

from server.machinery import errors
from server.machinery.values import Obj
from server.objects import render
from server.objects.context import Context
from server.objects.storeerrors import store_call
from server.registry.resources import Resource

PREEMPT_LOWER = "PreemptLowerPriority"


async def _class(ctx: Context, name: str) -> Obj | None:
    classes = ctx.registry.get("scheduling.k8s.io", "v1", "priorityclasses")
    if classes is None:
        return None
    got = await store_call(ctx.store.get(classes.key("", name)))
    return render.load(got.kv.value) if got.kv is not None else None


async def _global_default(ctx: Context) -> Obj | None:
    """getDefaultPriorityClass: of the classes marked globalDefault, the one of the lowest value."""
    classes = ctx.registry.get("scheduling.k8s.io", "v1", "priorityclasses")
    if classes is None:
        return None
    listed = await store_call(ctx.store.list(classes.key_prefix("")))
    defaults = [obj for obj in map(render.load, (kv.value for kv in listed.kvs)) if obj.get("globalDefault")]
    return min(defaults, key=lambda c: int(c.get("value") or 0), default=None)


def keep(pod: Obj, old: Obj) -> None:
    """An update's admitPod: a priority and preemption policy the updated Pod does not give are the stored one's."""
    spec, before = pod.setdefault("spec", {}), old.get("spec") or {}
    for field in ("priority", "preemptionPolicy"):
        if spec.get(field) is None and before.get(field) is not None:
            spec[field] = before[field]


def _forbidden(resource: Resource, name: str, why: str) -> errors.ApiError:
    return errors.forbidden(resource.resource, resource.group, name, why)


async def validate_class(ctx: Context, resource: Resource, operation: str, priority_class: Obj) -> None:
    """validatePriorityClass: a class marked globalDefault while another one is (validation, on create and
    update of the class itself)."""
    if not priority_class.get("globalDefault"):
        return
    name = str((priority_class.get("metadata") or {}).get("name") or "")
    found = await _global_default(ctx)
    if found is None:
        return
    default_name = str((found.get("metadata") or {}).get("name") or "")
    if operation == "CREATE" or default_name != name:
        raise _forbidden(resource, name, f"PriorityClass {default_name} is already marked as default. Only one "
                                         "default can exist")


async def admit(ctx: Context, resource: Resource, pod: Obj) -> None:
    """Set a new Pod's priority, priorityClassName and preemptionPolicy in place, or refuse it (403)."""
    spec = pod.setdefault("spec", {})
    name = str((pod.get("metadata") or {}).get("name") or "")
    class_name = spec.get("priorityClassName") or ""
    found = await (_class(ctx, class_name) if class_name else _global_default(ctx))
    if class_name and found is None:
        raise _forbidden(resource, name, f"no PriorityClass with name {class_name} was found")
    priority = int(found.get("value") or 0) if found is not None else 0
    policy = str(found.get("preemptionPolicy") or PREEMPT_LOWER) if found is not None else PREEMPT_LOWER
    if "priority" in spec and spec["priority"] is not None and spec["priority"] != priority:
        raise _forbidden(resource, name, f"the integer value of priority ({spec['priority']}) must not be provided "
                                         f"in pod spec; priority admission controller computed {priority} from the "
                                         "given PriorityClass name")
    if spec.get("preemptionPolicy") and spec["preemptionPolicy"] != policy:
        raise _forbidden(resource, name, f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must "
                                         f"not be provided in pod spec; priority admission controller computed "
                                         f"{policy} from the given PriorityClass name")
    if found is not None and not class_name:
        spec["priorityClassName"] = (found.get("metadata") or {}).get("name") or ""
    spec["priority"] = priority
    spec["preemptionPolicy"] = policy
