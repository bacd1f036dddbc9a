"""Update (PUT): replace an object under optimistic concurrency.

A resourceVersion in the body is a precondition (409 Conflict when stale); none
means unconditional, retried against concurrent writers until it lands, as
kube-apiserver's GuaranteedUpdate does (this core's writers of one object take
turns, keygate.py, so a hot object costs one attempt per write). Where the store
remembers the object (etcd's watch), the first round starts from that memory
instead of a read. Server-owned fields are carried over from the stored object;
a write that changes nothing keeps the resourceVersion and emits no event.
"""

from __future__ import annotations

from collections.abc import Callable

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors, meta
from server.machinery.patch.values import copy_json
from server.machinery.validation import names
from server.machinery.values import Obj
from server.objects import body, conversion, create, managed, options, render, size, validate
from server.objects.admitting import Attributes, admit, mutate
from server.objects.context import Context
from server.objects.resolve import resolve
from server.objects.storeerrors import store_call
from server.registry.resources import Resource
from storage import KeyValue, Outcome, WriteResult

# rest's Update of a kind that does not AllowUnconditionalUpdate, given no resourceVersion: the 0 Go's %#v prints
UNVERSIONED = errors.Cause("FieldValueInvalid", "Invalid value: 0x0: must be specified for an update",
                           "metadata.resourceVersion")

async def update(ctx: Context, req: core_pb2.UpdateRequest) -> core_pb2.UpdateResponse:
    resource = resolve(ctx.registry, req.path, "update")
    handler = resource.handlers_of(req.path.subresource).update
    if handler is not None:  # a subresource's own update (/scale), written through guaranteed_update below
        return await handler(ctx, resource, req)
    dry_run = options.dry_run(req.options.dryRun, "UpdateOptions")
    mode = options.field_validation(req.options.fieldValidation, "UpdateOptions")
    manager = options.field_manager(req.options.fieldManager, "UpdateOptions")
    obj, warnings = body.decode(resource, req.object, mode)
    check_name(obj, req.path.name, req.path.namespace)
    if resource.strategy.allow_create_on_update() and not req.path.subresource:
        got = await store_call(ctx.store.get(resource.key(req.path.namespace, req.path.name)))
        if got.kv is None:
            created = await create.create(ctx, core_pb2.CreateRequest(
                path=req.path, object=req.object, accept=req.accept,
                options={"dryRun": req.options.dryRun, "fieldValidation": req.options.fieldValidation,
                         "fieldManager": manager}))
            return core_pb2.UpdateResponse(object=created.object, warnings=created.warnings, created=True)
    decoded = [obj]  # the first round writes the decoded body itself; a retry (a lost race) decodes it again

    def produce(current: Obj) -> tuple[Obj, list[str]]:
        if decoded:
            return decoded.pop(), warnings
        again, _ = body.decode(resource, req.object, mode)
        check_name(again, req.path.name, req.path.namespace)
        return again, warnings

    return await guaranteed_update(ctx, resource, req.path, produce, dry_run=dry_run, accept=req.accept,
                                   manager=manager, uid_precondition=True,
                                   request_options=create.write_options("UpdateOptions", dry_run, manager))


# Given the stored object (with its kind, apiVersion and resourceVersion, as a client sees it), the
# object to store (a fresh one: the update changes it) and the warnings to answer with.
Produce = Callable[[Obj], tuple[Obj, list[str]]]


async def guaranteed_update(
    ctx: Context,
    resource: Resource,
    path: core_pb2.ResourcePath,
    produce: Produce,
    *,
    dry_run: bool,
    accept: render.Encoding,
    manager: str | None,
    direct: bool = False,
    uid_precondition: bool = False,
    request_options: Obj | None = None,
) -> core_pb2.UpdateResponse:
    """Read, produce the new object, write if unchanged since the read; retried as GuaranteedUpdate is.

    The produced object's metadata.resourceVersion is a precondition: a stale one is 409 Conflict.
    PUT produces the request body (so a lost race with a resourceVersion is a conflict); PATCH
    applies its patch to the current object each time (so it is simply applied again). manager:
    the field manager to record an Update for (None: produce sets managedFields, as apply does).
    direct: the produced object is stored as produced, as a subresource whose REST writes the storage's
    GuaranteedUpdate itself (pods/binding): no defaults, strategy, validation or admission run; the writers'
    turns, the no-op rule, the size limit and the rendering rules still do. request_options: the options
    admission sees (kube's PatchOptions from dry_run and manager when None). uid_precondition: the produced
    object's uid, when it has one, is a precondition (409) checked before anything else, as a PUT body's is
    (rest.defaultUpdatedObjectInfo.Preconditions); a patch has none, so a uid it changes is refused by
    validation (422, field is immutable).
    """
    if request_options is None:
        request_options = create.write_options("PatchOptions", dry_run, manager)
    key = resource.key(path.namespace, path.name)
    held = False if dry_run else await ctx.writers.enter(key)  # this core's writers of the key take turns
    try:
        return await _until_written(ctx, resource, path, produce, key, dry_run=dry_run, accept=accept,
                                    manager=manager, direct=direct, uid_precondition=uid_precondition,
                                    request_options=request_options)
    finally:
        if held:
            ctx.writers.leave(key)


async def _until_written(
    ctx: Context,
    resource: Resource,
    path: core_pb2.ResourcePath,
    produce: Produce,
    key: bytes,
    *,
    dry_run: bool,
    accept: render.Encoding,
    manager: str | None,
    direct: bool,
    uid_precondition: bool,
    request_options: Obj,
) -> core_pb2.UpdateResponse:
    # The store's recent memory of the key (etcd: its watch's window) stands in for the first read, as
    # kube-apiserver's watch cache hands GuaranteedUpdate the object it probably is: the write's compare
    # catches a stale one and answers the current key. Whatever the stale object alone would decide (a
    # conflict, a refusal, a write that changes nothing) is decided again from a fresh read.
    kv = None if dry_run else ctx.store.recent(key)
    fresh = kv is None
    if fresh:
        kv = (await store_call(ctx.store.get(key))).kv
    while True:  # GuaranteedUpdate's loop: until the compare holds; the request's deadline bounds it
        if kv is None:
            raise errors.not_found(resource.resource, resource.group, path.name)
        outcome = await _attempt(ctx, resource, path, produce, kv, dry_run=dry_run, accept=accept,
                                 manager=manager, fresh=fresh, direct=direct, uid_precondition=uid_precondition,
                                 request_options=request_options)
        if isinstance(outcome, core_pb2.UpdateResponse):
            return outcome
        if outcome is None:  # decided from a stale object: read it
            kv, fresh = (await store_call(ctx.store.get(key))).kv, True
        else:  # the compare failed: the write's answer is the current key
            kv, fresh = outcome.current, True


async def _attempt(
    ctx: Context,
    resource: Resource,
    path: core_pb2.ResourcePath,
    produce: Produce,
    kv: KeyValue,
    *,
    dry_run: bool,
    accept: render.Encoding,
    manager: str | None,
    fresh: bool,
    direct: bool,
    uid_precondition: bool,
    request_options: Obj,
) -> core_pb2.UpdateResponse | WriteResult | None:
    """One round of guaranteed_update over `kv`: the answer, the write that lost a race (its current key), or
    None when a stale (not `fresh`) `kv` would answer without writing."""
    try:
        old = render.load_as(resource, await conversion.value(resource, kv.value))
        obj, produced = produce(_as_seen(resource, old, kv.mod_revision))
        warnings = list(produced)  # this round's: admission adds its own to them
        if uid_precondition:
            _check_uid(resource, path, obj, old)
        precondition = _precondition(meta.meta(obj).get("resourceVersion"))
        if not precondition and not resource.strategy.unconditional_update:
            raise errors.invalid(resource.resource, resource.group, path.name, UNVERSIONED.field + ": "
                                 + UNVERSIONED.message, [UNVERSIONED])
        if precondition and precondition != str(kv.mod_revision):
            raise errors.conflict(resource.resource, resource.group, path.name)
        if direct:
            new = obj
        else:
            new = await _through_strategy(ctx, resource, path, obj, old, dry_run=dry_run, manager=manager,
                                          warnings=warnings, request_options=request_options)
        value = render.to_value(resource, await conversion.to_storage(resource, new))
    except errors.ApiError:  # refused: by the object as it is, not as it may have been
        if fresh:
            raise
        return None
    if value == kv.value:
        return await _converted_response(resource, kv.value, kv.mod_revision, accept, warnings) if fresh else None
    if dry_run:
        return core_pb2.UpdateResponse(
            object=render.raw_unstored(resource, new, accept, kv.mod_revision), warnings=warnings)
    key = kv.key
    if _deletion_complete(resource, new):
        result = await store_call(ctx.store.delete(key, expected_mod_revision=kv.mod_revision))
    else:
        size.check(value)
        result = await store_call(ctx.store.update(key, value, expected_mod_revision=kv.mod_revision))
    if result.outcome is Outcome.OK:
        return await _converted_response(resource, value, result.revision, accept, warnings)
    return result


async def _through_strategy(ctx: Context, resource: Resource, path: core_pb2.ResourcePath, obj: Obj, old: Obj, *,
                            dry_run: bool, manager: str | None, warnings: list[str], request_options: Obj) -> Obj:
    """The produced object as the kind's (or its subresource's) update strategy makes it: defaulted, its
    managed fields recorded, prepared, validated and admitted."""
    resource.strategy.default(obj)  # after apply's ownership (set in produce): defaults it adds are nobody's
    if manager is not None:
        managed.track_update(resource, path.subresource, old, obj, manager)
    sub = resource.subresource(path.subresource) if path.subresource else None
    view = sub.admitted_as if sub is not None else None
    attrs: Attributes | None = None
    if view is None:  # mutating admission on the updated object, before BeforeUpdate, as kube's UpdatedObject
        attrs = Attributes(resource, "UPDATE", path.name, path.namespace, obj, old, dry_run,
                           subresource=path.subresource, options=request_options, warnings=warnings)
        await mutate(ctx, attrs)
        assert attrs.obj is not None
        obj = attrs.obj
    owners = meta.meta(obj).get("managedFields")
    new = prepare_for_update(resource, obj, old, path.subresource)
    if path.subresource:  # the subresource rule took metadata from the stored object
        _set_owners(new, owners)
    validate.raise_if_invalid(resource, new, validate.for_update(resource, new, old, path.subresource))
    strategy = resource.strategy  # rest.BeforeUpdate: its warnings after validation
    warnings.extend(strategy.warnings_on_subresource_update(path.subresource, new, old) if path.subresource
                    else strategy.warnings_on_update(new, old))
    if not path.subresource:
        resource.strategy.canonicalize(new)
    if attrs is not None:
        attrs.obj = new
        await admit(ctx, attrs)
        return new
    assert view is not None
    shown = view.show(new)
    attrs = Attributes(resource, "UPDATE", path.name, path.namespace, copy_json(shown), view.show(old), dry_run,
                       subresource=path.subresource, options=request_options, warnings=warnings, kind=view.kind)
    await admit(ctx, attrs)
    if attrs.obj is not None and attrs.obj != shown:  # a mutating webhook changed the subresource's object
        new = view.take(new, attrs.obj)
        validate.raise_if_invalid(resource, new, validate.for_update(resource, new, old, path.subresource))
    return new


def _precondition(version: object) -> str:
    """An updated object's resourceVersion as a precondition: none where it reads as 0 ("" or "0"), as kube's
    versioner parses it into the 0 that means an unconditional update. One that is no unsigned integer is the
    versioner's strconv.ParseUint error, as a 400 (kube-apiserver answers it as a 500)."""
    if not version or not isinstance(version, str):
        return ""
    if not (version.isascii() and version.isdigit()):
        raise errors.bad_request(f"strconv.ParseUint: parsing {names.go_quote(version)}: invalid syntax")
    number = int(version)
    if number >= 1 << 64:
        raise errors.bad_request(f"strconv.ParseUint: parsing {names.go_quote(version)}: value out of range")
    return version if number else ""


def _as_seen(resource: Resource, obj: Obj, revision: int) -> Obj:
    """The stored object as clients see it: kind, apiVersion and resourceVersion included."""
    seen: Obj = {"kind": resource.kind, "apiVersion": resource.api_version}
    seen.update(obj)
    seen["metadata"] = {**meta.meta(obj), "resourceVersion": str(revision)}
    return seen


def _check_uid(resource: Resource, path: core_pb2.ResourcePath, obj: Obj, old: Obj) -> None:
    """A uid in the body is a precondition (409), checked by the storage layer before any validation."""
    uid, old_uid = meta.meta(obj).get("uid"), meta.meta(old).get("uid")
    if uid and uid != old_uid:
        key = "/".join(p for p in ("/registry", resource.resource, path.namespace, path.name) if p)
        detail = (f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: "
                  f"Precondition failed: UID in precondition: {uid}, UID in object meta: {old_uid}")
        raise errors.conflict(resource.resource, resource.group, path.name, detail)


def check_name(obj: Obj, name: str, namespace: str) -> None:
    """The body must be in the URL's namespace (EnsureObjectNamespaceMatchesRequestNamespace) and name the object
    the URL names (checkName), checked in kube's update handler's order."""
    m = meta.meta(obj)
    body_ns = m.get("namespace", "")
    if namespace and body_ns and body_ns != namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    body_name = m.get("name", "")
    if not body_name:
        raise errors.bad_request(f"the name of the object ({name} based on URL) was undeterminable: "
                                 "name must be provided")
    if body_name != name:
        raise errors.bad_request(f"the name of the object ({body_name}) does not match the name on the URL ({name})")
    if namespace:
        m["namespace"] = namespace


def check_patched_name(obj: Obj, path: core_pb2.ResourcePath) -> None:
    """kube-apiserver's checkName on the patched object: a patch may not rename the object or move it (400)."""
    m = obj.get("metadata")
    name = m.get("name") if isinstance(m, dict) else None
    if not name:
        raise errors.bad_request(
            f"the name of the object ({path.name} based on URL) was undeterminable: name must be provided")
    if name != path.name:
        raise errors.bad_request(f"the name of the object ({name}) does not match the name on the URL ({path.name})")
    namespace = m.get("namespace") if isinstance(m, dict) else None
    if path.namespace and namespace and namespace != path.namespace:
        raise errors.bad_request(
            f"the namespace of the object ({namespace}) does not match the namespace on the request ({path.namespace})")


def prepare_for_update(resource: Resource, new: Obj, old: Obj, subresource: str) -> Obj:
    """kube-apiserver's BeforeUpdate plus the status rules: what the client may not change is kept."""
    sub = resource.subresource(subresource) if subresource else None
    if sub is not None:
        taken = _take_field(new, old, sub.field_path)
        if sub.metadata_reset is not None:  # the status strategy keeps the request's metadata
            taken["metadata"] = _system_fields_kept(new, old, sub.metadata_reset)
        if sub.prepare is not None:
            sub.prepare(taken, old)
        _bump_generation(resource, taken, old)  # /scale changes the spec: the generation rises, as kube's does
        return taken
    _system_fields_kept(new, old)
    if resource.has_status:
        resource.strategy.reset_status(new, old)
    resource.strategy.prepare_for_update(new, old)
    _bump_generation(resource, new, old)
    return new


def _system_fields_kept(new: Obj, old: Obj, reset: tuple[str, ...] = ()) -> dict[str, object]:
    """new's metadata (changed in place) with what rest.BeforeUpdate keeps on any update taken from old, and the
    fields in `reset` (a status strategy's) as old has them."""
    m, old_m = meta.meta(new), meta.meta(old)
    if not m.get("uid"):
        m["uid"] = old_m.get("uid")
    for field in ("creationTimestamp", "deletionTimestamp", "generation", *reset):
        if field in old_m:
            m[field] = old_m[field]
        else:
            m.pop(field, None)
    if "deletionGracePeriodSeconds" in old_m and "deletionGracePeriodSeconds" not in m:
        m["deletionGracePeriodSeconds"] = old_m["deletionGracePeriodSeconds"]
    return m


def _bump_generation(resource: Resource, new: Obj, old: Obj) -> None:
    if resource.strategy.tracks_generation and \
            meta.body_without_meta_and_status(new) != meta.body_without_meta_and_status(old):
        meta.meta(new)["generation"] = meta.meta(old).get("generation", 0) + 1


def _set_owners(obj: Obj, owners: object) -> None:
    if owners:
        meta.meta(obj)["managedFields"] = owners
    else:
        meta.meta(obj).pop("managedFields", None)


def _deletion_complete(resource: Resource, obj: Obj) -> bool:
    """An object marked for deletion goes once its last finalizer is removed."""
    m = meta.meta(obj)
    if not m.get("deletionTimestamp") or m.get("finalizers"):
        return False
    return not resource.strategy.holds_deletion(obj)


def _response(
    resource: Resource, value: bytes, revision: int, accept: render.Encoding, warnings: list[str]
) -> core_pb2.UpdateResponse:
    response = core_pb2.UpdateResponse(warnings=warnings)
    render.raw_into(response.object, resource, value, str(revision), accept)
    return response


async def _converted_response(
    resource: Resource, value: bytes, revision: int, accept: render.Encoding, warnings: list[str]
) -> core_pb2.UpdateResponse:
    """_response for a stored value, at the resource's version."""
    return _response(resource, await conversion.value(resource, value), revision, accept, warnings)


def _take_field(new: Obj, old: Obj, path: tuple[str, ...]) -> Obj:
    """The stored object with only the field at `path` taken from the request (a subresource update)."""
    result: Obj = copy_json(old)
    source: object = new
    for part in path:
        source = source.get(part) if isinstance(source, dict) else None
    target = result
    for part in path[:-1]:
        target = target.setdefault(part, {})
    if source is None:
        target.pop(path[-1], None)
    else:
        target[path[-1]] = source
    return result
