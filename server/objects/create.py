"""Create (POST): a new object gets its name, uid, creationTimestamp and first resourceVersion here."""

from __future__ import annotations

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors, meta
from server.machinery.values import Obj
from server.objects import body, conversion, managed, options, render, size, validate
from server.objects.admitting import Attributes, admit
from server.objects.context import Context
from server.objects.namespaces import require_active_namespace
from server.objects.resolve import resolve
from server.objects.storeerrors import store_call
from server.registry.resources import Resource
from storage import Outcome

GENERATE_NAME_ATTEMPTS = 8  # kube-apiserver retries a generated name that is taken


async def create(ctx: Context, req: core_pb2.CreateRequest) -> core_pb2.CreateResponse:
    """Decode, set server fields, admit (the namespace), name, validate, store — kube-apiserver's order."""
    resource = resolve(ctx.registry, req.path, "create")
    # resolve admitted a subresource: one the kind writes with POST (pods/binding); or the resource has a
    # create of its own (bindings, never stored).
    handler = resource.handlers_of(req.path.subresource).create
    if handler is not None:
        return await handler(ctx, resource, req)
    dry_run = options.dry_run(req.options.dryRun, "CreateOptions")
    mode = options.field_validation(req.options.fieldValidation, "CreateOptions")
    manager = options.field_manager(req.options.fieldManager, "CreateOptions")
    obj, warnings = body.decode(resource, req.object, mode)
    if resource.answer_create is not None:
        return await answer(ctx, resource, obj, req.path.namespace, manager=manager, accept=req.accept,
                            warnings=warnings)
    return await create_object(ctx, resource, obj, req.path.namespace, manager=manager, dry_run=dry_run,
                               accept=req.accept, warnings=warnings)


async def create_object(
    ctx: Context, resource: Resource, obj: Obj, namespace: str, *, manager: str | None, dry_run: bool,
    accept: render.Encoding, warnings: list[str], request_options: Obj | None = None,
) -> core_pb2.CreateResponse:
    """Store a new typed object. manager: the field manager to record an Update for (None when the
    caller has set managedFields itself, as server-side apply does). request_options: the options admission
    sees (kube's CreateOptions from dry_run and manager when None)."""
    resource.strategy.default(obj)
    if manager is not None:
        managed.track_update(resource, "", None, obj, manager)
    prepare_for_create(resource, obj, namespace)
    if resource.namespaced:
        await require_active_namespace(ctx, resource, obj)
    m = meta.meta(obj)
    generate = not m.get("name") and isinstance(m.get("generateName"), str) and bool(m["generateName"])
    if generate:
        m["name"] = meta.generate_name(m["generateName"])
    validate.raise_if_invalid(resource, obj, validate.for_create(resource, obj))
    warnings.extend(resource.strategy.warnings_on_create(obj))  # rest.BeforeCreate: after validation
    resource.strategy.canonicalize(obj)
    if request_options is None:
        request_options = write_options("CreateOptions", dry_run, manager)
    await admit(ctx, Attributes(resource, "CREATE", m.get("name") or "", m.get("namespace") or "", obj, None,
                                dry_run, options=request_options, warnings=warnings))
    for attempt in range(GENERATE_NAME_ATTEMPTS if generate else 1):
        if attempt:
            m["name"] = meta.generate_name(m["generateName"])
        key = resource.key(m.get("namespace", ""), m["name"])
        if dry_run:
            existing = await store_call(ctx.store.get(key))
            if existing.kv is None:  # the object as admitted, with any resourceVersion it came with
                return core_pb2.CreateResponse(object=render.raw_unstored(resource, obj, accept, _sent_version(m)),
                                               warnings=warnings)
            taken = existing.kv
            continue
        if _sent_version(m):
            # kube-apiserver's storage refuses this with a plain error, which it answers as a 500 without a reason.
            raise errors.ApiError(errors.status(
                500, "", "resourceVersion should not be set on objects to be created", with_details=False))
        value = render.to_value(resource, await conversion.to_storage(resource, obj))
        size.check(value)
        result = await store_call(ctx.store.create(key, value))
        if result.outcome is Outcome.OK:
            response = core_pb2.CreateResponse(warnings=warnings)
            render.raw_into(response.object, resource, await conversion.value(resource, value), str(result.revision),
                            accept)
            return response
        assert result.current is not None
        taken = result.current
    if generate:
        raise errors.generate_name_conflict(resource.resource, resource.group, m["name"])
    being_deleted = bool(meta.meta(render.load(taken.value)).get("deletionTimestamp"))
    raise errors.already_exists(resource.resource, resource.group, m["name"], being_deleted=being_deleted)


async def answer(ctx: Context, resource: Resource, obj: Obj, namespace: str, *, manager: str | None,
                 accept: render.Encoding, warnings: list[str]) -> core_pb2.CreateResponse:
    """A create-only resource's answer (Resource.answer_create), in kube's create handler order: the
    namespace placed, managed fields recorded, then the REST Create. A zero creationTimestamp prints null."""
    place_namespace(resource, meta.meta(obj), namespace)
    if manager is not None:
        managed.track_update(resource, "", None, obj, manager)
    assert resource.answer_create is not None
    answered = await resource.answer_create(ctx, resource, obj)
    meta.meta(answered).setdefault("creationTimestamp", None)
    return core_pb2.CreateResponse(object=render.raw_unstored(resource, answered, accept), warnings=warnings)


def write_options(kind: str, dry_run: bool, manager: str | None, *, force: bool = False) -> Obj:
    """The options of a write as admission webhooks receive them (meta.k8s.io/v1 JSON)."""
    out: Obj = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if dry_run:
        out["dryRun"] = ["All"]
    if force:
        out["force"] = True
    if manager:
        out["fieldManager"] = manager
    return out


def _sent_version(m: Obj) -> int:
    """The resourceVersion a create's object came with, when it is one the store would read (a positive
    integer); 0 otherwise (a version that is not a number is dropped, as kube's versioner drops it)."""
    rv = m.get("resourceVersion")
    if not (isinstance(rv, str) and rv.isascii() and rv.isdigit()):
        return 0
    version = int(rv)
    return version if version < 1 << 64 else 0


def place_namespace(resource: Resource, m: Obj, namespace: str) -> None:
    """The request's namespace on a namespaced object (400 when the body names another); none on others."""
    if resource.namespaced:
        body_ns = m.get("namespace")
        if body_ns and body_ns != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        m["namespace"] = namespace
    else:
        m.pop("namespace", None)


def prepare_for_create(resource: Resource, obj: Obj, namespace: str) -> None:
    """Server-set fields, as kube-apiserver's BeforeCreate sets them; client values are replaced. A
    resourceVersion the client sent stays until the store: a stored create refuses it (_sent_version), a dry
    run answers with it, as kube's storage and its dry-run storage do."""
    m = meta.meta(obj)
    place_namespace(resource, m, namespace)
    m["uid"] = meta.new_uid()
    m["creationTimestamp"] = meta.now()
    for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
        m.pop(field, None)
    if resource.strategy.tracks_generation:
        m["generation"] = 1
    if resource.has_status:
        resource.strategy.reset_status(obj, None)
    resource.strategy.prepare_for_create(obj)
