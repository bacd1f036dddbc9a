"""Delete: remove an object, or mark it for deletion while finalizers hold it.

With finalizers (or, for a namespace, spec.finalizers) the object gets a
deletionTimestamp and stays (a MODIFIED event); it goes when an update removes
the last finalizer. A deletionTimestamp, once set, is never unset.

The propagation policy becomes the garbage collector's finalizers first, as
kube-apiserver's registry store does (deletionFinalizersForGarbageCollection):
Orphan adds `orphan`, Foreground adds `foregroundDeletion`, Background (the
default) adds neither, so the object goes at once and the collector
(server/controllers/gc/) deletes its dependents afterwards. Example: deleting
a ConfigMap without finalizers with propagationPolicy=Foreground stores it with
deletionTimestamp and finalizers ["foregroundDeletion"]; deleting it again with
Background removes that finalizer, and with it the object.

Kinds with a grace period (Pods bound to a node) are deleted gracefully first, as rest.BeforeDelete does: the
object gets deletionTimestamp = now + the period and deletionGracePeriodSeconds (a MODIFIED event) and stays
until a delete with a period of 0 (the kubelet's; here server/controllers/terminator.py's).

What a delete answers is kube-apiserver's registry store's (Store.Delete and finalizeDelete): a delete that
only marks the object (a grace period starting or shortened, finalizers holding it) answers the object as
stored; a completed delete, and a repeated delete while a graceful deletion is pending, answer the object for
kinds whose store sets ReturnDeletedObject (Strategy.returns_deleted_object: Pods, Services, Namespaces, ...)
and the Success Status for the others. The deleted object carries the revision of its deletion as its
resourceVersion (the etcd3 store decodes it at the delete's revision), a dry run its current one.
"""

from __future__ import annotations

import copy
import time

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors, meta
from server.machinery.codec import gotime
from server.machinery.values import Obj
from server.objects import conversion, options, render
from server.objects.admitting import Attributes, admit
from server.objects.context import Context
from server.objects.resolve import resolve
from server.objects.storeerrors import store_call
from server.registry.resources import Resource
from storage import KeyValue, Outcome

ORPHAN_FINALIZER = "orphan"  # metav1.FinalizerOrphanDependents
FOREGROUND_FINALIZER = "foregroundDeletion"  # metav1.FinalizerDeleteDependents


async def delete(ctx: Context, req: core_pb2.DeleteRequest) -> core_pb2.DeleteResponse:
    resource = resolve(ctx.registry, req.path, "delete")
    dry_run, _policy = options.delete_options(req.options)
    return await delete_object(ctx, resource, req.path.namespace, req.path.name, req.options, dry_run, req.accept)


async def delete_object(
    ctx: Context,
    resource: Resource,
    namespace: str,
    name: str,
    opts: meta_pb2.DeleteOptions,
    dry_run: bool,
    accept: render.Encoding,
    *,
    answer_deleted: bool | None = None,
    admitted: bool = True,
) -> core_pb2.DeleteResponse:
    """Delete one object; `answer_deleted` overrides whether a completed delete answers the object (default:
    the strategy's returns_deleted_object), for DeleteCollection, which lists what it read instead.
    admitted=False deletes without admission, as kube's EvictionREST deletes the Pod it evicts (its request
    was admitted as the Eviction's CREATE)."""
    key = resource.key(namespace, name)
    if answer_deleted is None:
        answer_deleted = resource.strategy.returns_deleted_object
    resource.strategy.admit_delete(name)
    while True:  # GuaranteedUpdate's loop: until the compare holds; the request's deadline bounds it
        got = await store_call(ctx.store.get(key))
        if got.kv is None:
            raise errors.not_found(resource.resource, resource.group, name)
        stored_kv = got.kv
        got = got._replace(kv=(await conversion.kvs(resource, [got.kv]))[0])
        assert got.kv is not None
        old = render.load(got.kv.value)
        _check_preconditions(resource, name, opts.preconditions, old, got.kv)
        seen = {"kind": resource.kind, "apiVersion": resource.api_version, **old}
        seen["metadata"] = {**meta.meta(old), "resourceVersion": str(got.kv.mod_revision)}
        if admitted:
            await admit(ctx, Attributes(resource, "DELETE", name, namespace, None, seen, dry_run,
                                        options=_options_json(opts, dry_run)))
        held = resource.strategy.holds_deletion(old)
        conflict = resource.strategy.redelete_conflict()
        if held and conflict and meta.meta(old).get("deletionTimestamp"):
            raise errors.conflict(resource.resource, resource.group, name, conflict)
        graceful = _graceful(resource, old, opts)
        if graceful is _PENDING:  # rest.BeforeDelete's pendingGraceful: finalizeDelete of the object unchanged
            if not answer_deleted:
                return core_pb2.DeleteResponse(status=success_status(resource, old))
            return core_pb2.DeleteResponse(object=render.raw(resource, got.kv.value, str(got.kv.mod_revision), accept))
        finalizers = gc_finalizers(resource, old, opts)
        marked: Obj | None = None
        if isinstance(graceful, dict):  # the grace period starts: always a write
            marked = graceful
            meta.meta(marked)["finalizers"] = finalizers
            if not finalizers:
                meta.meta(marked).pop("finalizers", None)
        elif finalizers or held:
            marked = _mark(resource, old, finalizers)
        if marked is not None:
            value = render.to_value(resource, await conversion.to_storage(resource, marked))
            if conversion.converts(resource):  # compared and answered at the storage version
                if value == stored_kv.value:
                    return core_pb2.DeleteResponse(object=render.raw(resource, got.kv.value, str(got.kv.mod_revision),
                                                                     accept))
                if dry_run:
                    return core_pb2.DeleteResponse(
                        object=render.raw_unstored(resource, marked, accept, got.kv.mod_revision))
                result = await store_call(ctx.store.update(key, value, expected_mod_revision=got.kv.mod_revision))
                if result.outcome is Outcome.OK:
                    answered = await conversion.value(resource, value)
                    return core_pb2.DeleteResponse(object=render.raw(resource, answered, str(result.revision), accept))
                continue
            if marked is not graceful and value == got.kv.value:  # already marked: no write, no event
                return core_pb2.DeleteResponse(object=render.raw(resource, value, str(got.kv.mod_revision), accept))
            if dry_run:  # the dry-run store's GuaranteedUpdate: the marked object at the live resourceVersion
                return core_pb2.DeleteResponse(
                    object=render.raw_unstored(resource, marked, accept, got.kv.mod_revision))
            result = await store_call(ctx.store.update(key, value, expected_mod_revision=got.kv.mod_revision))
            if result.outcome is Outcome.OK:
                return core_pb2.DeleteResponse(object=render.raw(resource, value, str(result.revision), accept))
            continue
        revision = got.kv.mod_revision
        if not dry_run:
            result = await store_call(ctx.store.delete(key, expected_mod_revision=got.kv.mod_revision))
            if result.outcome is not Outcome.OK:
                continue
            revision = result.revision
        if answer_deleted:
            return core_pb2.DeleteResponse(object=render.raw(resource, got.kv.value, str(revision), accept))
        return core_pb2.DeleteResponse(status=success_status(resource, old))


def _options_json(opts: meta_pb2.DeleteOptions, dry_run: bool) -> Obj:
    """The DeleteOptions as admission webhooks receive them."""
    out: Obj = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
    if opts.HasField("gracePeriodSeconds"):
        out["gracePeriodSeconds"] = opts.gracePeriodSeconds
    if opts.HasField("propagationPolicy"):
        out["propagationPolicy"] = opts.propagationPolicy
    if dry_run:
        out["dryRun"] = ["All"]
    return out


def success_status(resource: Resource, obj: Obj) -> meta_pb2.Status:
    """What kube-apiserver answers a completed delete with: details name the object (kind is the resource)."""
    m = meta.meta(obj)
    result = meta_pb2.Status(status="Success")
    result.metadata.SetInParent()
    result.details.name = m.get("name", "")
    if resource.group:
        result.details.group = resource.group
    result.details.kind = resource.resource
    result.details.uid = m.get("uid", "")
    return result


def gc_finalizers(resource: Resource, obj: Obj, opts: meta_pb2.DeleteOptions) -> list[str]:
    """The object's finalizers with the garbage collector's as the delete options ask (the old list, order
    kept, when that is the same set): kube-apiserver's deletionFinalizersForGarbageCollection.

    Options come first (orphanDependents, then propagationPolicy), then a GC finalizer the object already
    has, then the kind's default; both are removed and added back as decided, orphan before foregroundDeletion.
    """
    current: list[str] = meta.meta(obj).get("finalizers") or []
    new = [f for f in current if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    if _should_orphan_dependents(resource, current, opts):
        new.append(ORPHAN_FINALIZER)
    if _should_delete_dependents(resource, current, opts):
        new.append(FOREGROUND_FINALIZER)
    return current if set(new) == set(current) else new


def _should_orphan_dependents(resource: Resource, finalizers: list[str], opts: meta_pb2.DeleteOptions) -> bool:
    if resource.strategy.garbage_collection == "Unsupported":
        return False
    if opts.HasField("orphanDependents"):
        return opts.orphanDependents
    if opts.propagationPolicy:
        return opts.propagationPolicy == "Orphan"
    for f in finalizers:
        if f in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER):
            return f == ORPHAN_FINALIZER
    return resource.strategy.garbage_collection == "OrphanDependents"


def _should_delete_dependents(resource: Resource, finalizers: list[str], opts: meta_pb2.DeleteOptions) -> bool:
    if resource.strategy.garbage_collection == "Unsupported" or opts.HasField("orphanDependents"):
        return False
    if opts.propagationPolicy:
        return opts.propagationPolicy == "Foreground"
    for f in finalizers:
        if f in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER):
            return f == FOREGROUND_FINALIZER
    return False


_PENDING: Obj = {}  # _graceful's answer for an object whose graceful deletion is under way


def _graceful(resource: Resource, obj: Obj, opts: meta_pb2.DeleteOptions) -> Obj | None:
    """rest.BeforeDelete for kinds with graceful deletion (Pods): the object marked with deletionTimestamp =
    now + its grace period and deletionGracePeriodSeconds (a tracked generation raised), _PENDING when a
    graceful deletion is already under way and the options do not shorten it, or None when the object is
    to go now (no grace period, a period of 0, or a pending deletion whose period is already 0).

    A later delete may only shorten the period: deletionTimestamp moves back by the difference. Negative
    periods count as 1 second.
    """
    requested = opts.gracePeriodSeconds if opts.HasField("gracePeriodSeconds") else None
    if requested is not None and requested < 0:
        requested = 1
    granted = resource.strategy.grace_period(obj, requested)
    if granted is None:  # the kind has no graceful deletion
        return None
    m = meta.meta(obj)
    if m.get("deletionTimestamp"):
        current = m.get("deletionGracePeriodSeconds")
        if not current:
            return None
        if requested is None or requested >= current:
            return _PENDING
        seconds, _ = gotime.parse(m["deletionTimestamp"], gotime.RFC3339)
        period, deadline = requested, seconds - current + requested
    else:
        period = granted
        if period <= 0:
            return None
        deadline = int(time.time()) + period
    if period <= 0:
        return None
    marked = copy.deepcopy(obj)
    mm = meta.meta(marked)
    if not mm.get("deletionTimestamp") and mm.get("generation", 0) > 0:
        mm["generation"] += 1
    mm["deletionTimestamp"] = gotime.format_seconds(deadline)
    mm["deletionGracePeriodSeconds"] = period
    return marked


def _mark(resource: Resource, obj: Obj, finalizers: list[str]) -> Obj:
    """kube-apiserver's markAsDeleting with the finalizers decided: the first mark sets deletionTimestamp
    (and raises a tracked generation); a later one keeps it."""
    marked = copy.deepcopy(obj)
    m = meta.meta(marked)
    if finalizers:
        m["finalizers"] = finalizers
    else:
        m.pop("finalizers", None)
    if not m.get("deletionTimestamp"):
        if m.get("generation", 0) > 0:
            m["generation"] += 1
        m["deletionTimestamp"] = meta.now()
    m["deletionGracePeriodSeconds"] = 0
    resource.strategy.mark_deleting(marked)
    return marked


def _check_preconditions(
    resource: Resource, name: str, pre: meta_pb2.Preconditions, obj: Obj, kv: KeyValue
) -> None:
    """409 Conflict when a DeleteOptions precondition fails, worded as kube-apiserver words it.

    rest.BeforeDelete names the kind ("ConfigMap"), e.g. `Operation cannot be fulfilled on ConfigMap "a":
    the UID in the precondition (x) does not match the UID in record (y). ...`; namespaces' own delete
    names the resource and says "Precondition failed: ...".
    """
    uid, rv = meta.meta(obj).get("uid", ""), str(kv.mod_revision)
    if resource.strategy.legacy_preconditions():
        target = resource.resource
        uid_detail = f"Precondition failed: UID in precondition: {pre.uid}, UID in object meta: {uid}"
        rv_detail = (f"Precondition failed: ResourceVersion in precondition: {pre.resourceVersion}, "
                     f"ResourceVersion in object meta: {rv}")
    else:
        target = resource.kind
        uid_detail = (f"the UID in the precondition ({pre.uid}) does not match the UID in record ({uid}). "
                      "The object might have been deleted and then recreated")
        rv_detail = (f"the ResourceVersion in the precondition ({pre.resourceVersion}) does not match the "
                     f"ResourceVersion in record ({rv}). The object might have been modified")
    if pre.HasField("uid") and pre.uid != uid:
        raise errors.conflict(target, resource.group, name, uid_detail)
    if pre.HasField("resourceVersion") and pre.resourceVersion != rv:
        raise errors.conflict(target, resource.group, name, rv_detail)
