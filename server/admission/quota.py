"""ResourceQuota admission (k8s.io/apiserver/pkg/admission/plugin/resourcequota): a create, or an update of a
kind charged on update, that would take a namespace past a quota's status.hard is refused with kube's 403, and
what it uses is added to each matching quota's status.used before the object is written.

The charge is a compare-and-swap on the quota's resourceVersion (an update of its /status through the core),
so two concurrent creates racing for the last unit cannot both pass: the loser reads the quota again and is
measured against the winner's usage. The quota controller (server/controllers/resourcequota.py) later
recomputes status.used from the stored objects, which also gives back what a refused write was charged.
A dry run is checked but charges nothing. A quota without status.hard (the controller has not seen it yet)
limits nothing, as in kube.

Whether a namespace has quotas is decided as kube's quotaAccessor decides it: by an informer's cache
(`Quotas`), so a write to a namespace without quota costs one index lookup and no store read; when the cache
holds none for the namespace, by a live list of the store, whose empty answer is remembered for 30 s per
namespace (kube's liveLookupCache, for a quota created a moment before its informer hears of it). A namespace
with quotas has them read from the store, so a write is measured against the status.used and status.hard of the
last write a client could have seen (the informer may be a moment behind), and a charge that loses its
compare-and-swap reads them again.
"""

from __future__ import annotations

import time
from collections import OrderedDict

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.admission.quantities import (
    ResourceList,
    add,
    dump,
    exceeded,
    mask,
    parse,
    pretty,
    remove_zeros,
    subtract_non_negative,
)
from server.admission.usage import Evaluator, evaluator
from server.machinery import errors, meta
from server.machinery.values import Obj
from server.objects import render, update
from server.objects.context import Context
from server.objects.storeerrors import store_call
from server.registry.resources import Resource
from server.runtime.informer import Informer

ATTEMPTS = 10  # kube's quota evaluator retries failed status writes this often
QUOTA_PREFIX = "/core/resourcequotas/"
QUOTAS = core_pb2.ResourcePath(version="v1", resource="resourcequotas")
LIVE_TTL = 30.0  # kube's liveTTL: how long a live lookup of a namespace without cached quotas is trusted
LIVE_SIZE = 100  # kube's lruSize: namespaces whose live lookup is remembered


def _forbidden(resource: Resource, obj: Obj, reason: str) -> errors.ApiError:
    return errors.forbidden(resource.resource, resource.group, meta.meta(obj).get("name") or "", reason)


async def quotas_in(ctx: Context, namespace: str) -> list[tuple[Obj, int]]:
    """The namespace's quotas with their revisions, read from the store."""
    page = await store_call(ctx.store.list(f"{QUOTA_PREFIX}{namespace}/".encode()))
    return [(render.load(kv.value), kv.mod_revision) for kv in page.kvs]


class Quotas:
    """kube's quotaAccessor: whether a namespace has quotas from the informer of ResourceQuotas (started by the
    caller and running for as long as this is used), else from a live list remembered for LIVE_TTL seconds; the
    quotas of a namespace that has some, from the store."""

    def __init__(self, informer: Informer[Obj]) -> None:
        self.informer = informer
        self._live: OrderedDict[str, tuple[float, list[tuple[Obj, int]]]] = OrderedDict()

    async def get(self, ctx: Context, namespace: str) -> list[tuple[Obj, int]]:
        if self.informer.cache.in_namespace(namespace):
            return await quotas_in(ctx, namespace)
        now = time.monotonic()
        entry = self._live.get(namespace)
        if entry is not None and entry[0] > now:
            self._live.move_to_end(namespace)
            return entry[1]
        found = await quotas_in(ctx, namespace)
        if found:  # the informer is a moment behind: asked again until it has them, never remembered stale
            self._live.pop(namespace, None)
            return found
        self._live[namespace] = (now + LIVE_TTL, found)
        self._live.move_to_end(namespace)
        while len(self._live) > LIVE_SIZE:
            self._live.popitem(last=False)
        return found


async def admit(ctx: Context, resource: Resource, obj: Obj, old: Obj | None, dry_run: bool,
                quotas: Quotas | None = None) -> None:
    """`quotas`: where the namespace's quotas are read first (None: the store, every time)."""
    ev = evaluator(resource.group, resource.resource)
    if old is not None and not ev.handles_update:
        return
    namespace = meta.meta(obj).get("namespace") or ""
    retry: set[str] | None = None  # names of quotas whose write lost a race; None: all
    conflict: errors.ApiError | None = None
    for _ in range(ATTEMPTS):
        if retry is None and quotas is not None:
            found = await quotas.get(ctx, namespace)
            if not found:
                return
        else:
            found = await quotas_in(ctx, namespace)
        quotas_now = [(q, rev) for q, rev in found if retry is None or meta.meta(q).get("name") in retry]
        charges = check(resource, ev, [q for q, _ in quotas_now], obj, old)
        if dry_run or not charges:
            return
        revisions = {meta.meta(q).get("name"): rev for q, rev in quotas_now}
        retry = set()
        for quota, used in charges:
            name = meta.meta(quota).get("name") or ""
            try:
                await _write_used(ctx, quota, revisions[name], used)
            except errors.ApiError as err:
                if err.status.code != 409:
                    raise
                conflict = err
                retry.add(name)
        if not retry:
            return
    assert conflict is not None
    raise conflict


def check(resource: Resource, ev: Evaluator, quotas: list[Obj], obj: Obj,
          old: Obj | None) -> list[tuple[Obj, ResourceList]]:
    """quota.CheckRequest: the quotas the object is charged to, each with its new status.used; raises kube's
    403 when a quota's constraints, usage statistics or hard limits refuse it."""
    interesting: list[Obj] = []
    for quota in quotas:
        if not ev.matches(quota, obj):
            continue
        name = meta.meta(quota).get("name") or ""
        status = quota.get("status") or {}
        restricted = ev.matching(list(status.get("hard") or {}))
        problem = ev.constraints(restricted, obj)
        if problem:
            raise _forbidden(resource, obj, f"failed quota: {name}: {problem}")
        used = status.get("used") or {}
        if any(r not in used for r in restricted):
            raise _forbidden(resource, obj, f"status unknown for quota: {name}, resources: "
                                            f"{','.join(sorted(restricted))}")
        interesting.append(quota)
    if not interesting:
        return []
    usage = ev.usage(obj)
    negative = sorted(n for n, q in usage.items() if q.sign() < 0)
    if negative:
        raise _forbidden(resource, obj, f"quota usage is negative for resource(s): {','.join(negative)}")
    deltas = {id(q): usage for q in interesting}
    if old is not None and meta.meta(old).get("resourceVersion"):
        delta = subtract_non_negative(usage, ev.usage(old))
        for quota in interesting:
            if ev.matches(quota, old):
                deltas[id(quota)] = delta
    charges: list[tuple[Obj, ResourceList]] = []
    for quota in interesting:
        delta = remove_zeros(deltas[id(quota)])
        if not delta:
            continue
        status = quota.get("status") or {}
        hard, used = parse(status.get("hard")), parse(status.get("used"))
        requested = mask(delta, hard)
        new_used = add(used, requested)
        over = exceeded(mask(new_used, requested), hard)
        if over:
            raise _forbidden(resource, obj, (
                f"exceeded quota: {meta.meta(quota).get('name')}, requested: {pretty(mask(requested, over))}, "
                f"used: {pretty(mask(used, over))}, limited: {pretty(mask(hard, over))}"))
        if dump(new_used) != dump(used):
            charges.append((quota, new_used))
    return charges


async def _write_used(ctx: Context, quota: Obj, revision: int, used: ResourceList) -> None:
    """The quota's status.used replaced, if the quota is still at `revision` (409 Conflict otherwise)."""
    m = meta.meta(quota)
    body = {**quota, "apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {**m, "resourceVersion": str(revision)},
            "status": {**(quota.get("status") or {}), "used": dump(used)}}
    await update.update(ctx, core_pb2.UpdateRequest(
        path=core_pb2.ResourcePath(version="v1", resource="resourcequotas", namespace=m.get("namespace", ""),
                                   name=m.get("name", ""), subresource="status"),
        object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(body))))
