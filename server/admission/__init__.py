"""kube-apiserver's admission chain for the built-in kinds, in kube's order: the mutating plugins
(LimitRanger's defaults, then ServiceAccount) on a new Pod, the kind's own admission (a Service's
allocations, RBAC's escalation check), then the validating ones: LimitRanger's bounds and, last,
ResourceQuota, which charges the object to the namespace's quotas just before it is written.

`chain` wraps each namespaced resource's own admission (Strategy.admit) with them (Strategy.admission), so
the core stays kind-agnostic.
A Pod the mutating plugins changed is validated again and its QoS class recomputed, as kube validates and
prepares a Pod after mutating admission. Custom resources, registered later by the CRD controller, are not
wrapped: quota counts only built-in kinds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Any

from server.admission import limitranger, quota, serviceaccount
from server.kinds.pods import POD_SCHEMA, qos_class
from server.kinds.shaped import retype
from server.machinery import meta
from server.machinery.values import Obj
from server.objects import validate
from server.objects.context import Context
from server.registry.resources import Resource

Admit = Callable[[Any, Obj, Obj | None, bool], Awaitable[None]]


def chain(resources: Iterable[Resource], *, service_accounts: bool) -> list[Resource]:
    """The resources with the admission plugins around their own `admit`. service_accounts: run the
    ServiceAccount plugin (only where the default ServiceAccount is kept in every namespace)."""
    return [replace(r, strategy=replace(r.strategy, admission=_admit(r, service_accounts=service_accounts)))
            if r.namespaced else r for r in resources]


def _admit(resource: Resource, *, service_accounts: bool) -> Admit:
    own = resource.strategy.admit
    is_pod = resource.group == "" and resource.resource == "pods"
    ranged = resource.group == "" and resource.resource in ("pods", "persistentvolumeclaims")

    async def admit(ctx: Context, obj: Obj, old: Obj | None, dry_run: bool) -> None:
        namespace = meta.meta(obj).get("namespace") or ""
        ranges = await limitranger.ranges_in(ctx, namespace) if ranged else []
        if is_pod and old is None:
            await _mutate_pod(ctx, resource, obj, ranges, service_accounts=service_accounts)
        await own(ctx, obj, old, dry_run)
        if ranges:
            limitranger.validate(resource, obj, old, ranges)
        await quota.admit(ctx, resource, obj, old, dry_run)

    return admit


async def _mutate_pod(ctx: Context, resource: Resource, pod: Obj, ranges: list[Obj], *,
                      service_accounts: bool) -> None:
    changed = limitranger.mutate_pod(pod, ranges) if ranges else False
    if service_accounts:
        await serviceaccount.admit(ctx, resource, pod)
        changed = True
    if not changed:
        return
    retype(POD_SCHEMA, pod)
    validate.raise_if_invalid(resource, pod, validate.for_create(resource, pod))
    pod.setdefault("status", {})["qosClass"] = qos_class(pod.get("spec") or {})
