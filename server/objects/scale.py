"""/scale: a resource's replica count read and written as an autoscaling/v1 Scale (kube-apiserver's ScaleREST).

A resource serves it by listing `subresource(rule)` among its subresources: the /scale Subresource with
handlers for get, update and patch bound to the resource's ScaleRule (server/registry/resources.py); nothing here is
written per kind. The Scale is a view of the stored object, never stored itself. For a Deployment with spec.replicas 3,
status.replicas 2 and spec.selector {matchLabels: {app: web}} it is

    {"kind": "Scale", "apiVersion": "autoscaling/v1",
     "metadata": {"name", "namespace", "uid", "resourceVersion", "creationTimestamp": the object's},
     "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web"}}

A write (PUT, any patch, server-side apply) turns the stored object into its Scale, applies the request
to that Scale, validates it (ValidateScale: 422 as Scale.autoscaling) and stores the object with
spec.replicas taken from it, through update's GuaranteedUpdate loop: the Scale's resourceVersion is a
precondition on the object (409 when stale), and the object's own rules run (its validation, its
generation, its managedFields, where the writer owns .spec.replicas through subresource "scale").
Admission sees the write as kube's ScaleREST shows it: an UPDATE whose object and oldObject are the new and
the stored Scales (Subresource.admitted_as); a Scale a mutating webhook changed gives the object its replicas.
The answer is the Scale of the object as stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import orjson

from capstan.api.autoscaling.v1 import autoscaling_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors, meta
from server.machinery.patch.values import copy_json
from server.machinery.schema import ProtoSchema
from server.machinery.selectors import labels
from server.machinery.validation import names
from server.machinery.values import Obj
from server.machinery.values import text_of as _text
from server.objects import apply, body, create, options, render, validate, views
from server.objects.context import Context
from server.objects.get import read as read_stored
from server.objects.patch import patcher
from server.objects.update import check_name, guaranteed_update
from server.registry import printing
from server.registry.resources import SCALE, AdmittedAs, Handlers, Resource, ScaleRule, Subresource

# The Scale kind, to decode, type, render and print Scales with (it is no resource of its own).
SCALE_KIND = Resource(
    group=SCALE.group, version=SCALE.version, resource="scale", kind=SCALE.kind, singular="scale", namespaced=True,
    schema=ProtoSchema(autoscaling_pb2.Scale), verbs=SCALE.verbs,
)
_SCALE_META = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")

# A patch already parsed (server/objects/patch.py), applied to the Scale as clients see it.
Patcher = Callable[[Obj], Obj]


def subresource(rule: ScaleRule, verbs: tuple[str, ...] = SCALE.verbs) -> Subresource:
    """The /scale subresource of a resource whose object reads and writes as a Scale by `rule`."""
    served = _ScaleREST(rule)
    return replace(SCALE, verbs=verbs, field_path=rule.spec_replicas,
                   handlers=Handlers(get=served.get, update=served.update, patch=served.patch),
                   admitted_as=AdmittedAs(SCALE_KIND, lambda obj: of(rule, obj, _revision(obj)),
                                          lambda obj, scale: _replicas_from(rule, obj, scale)))


class _ScaleREST:
    """kube-apiserver's ScaleREST for one ScaleRule: GET, PUT and PATCH of /scale."""

    def __init__(self, rule: ScaleRule) -> None:
        self.rule = rule

    async def get(self, ctx: Context, resource: Resource, req: core_pb2.GetRequest) -> core_pb2.GetResponse:
        try:
            kv = await read_stored(ctx, resource, req)
        except errors.ApiError as err:
            missing = self.rule.missing
            if missing is None or err.status.code != 404:
                raise
            raise errors.not_found(missing[1], missing[0], req.path.name) from None
        return core_pb2.GetResponse(object=read(self.rule, kv.value, kv.mod_revision, req))

    async def update(self, ctx: Context, resource: Resource, req: core_pb2.UpdateRequest
                     ) -> core_pb2.UpdateResponse:
        """PUT /scale: the body is a Scale; without a resourceVersion the write is unconditional."""
        dry_run = options.dry_run(req.options.dryRun, "UpdateOptions")
        mode = options.field_validation(req.options.fieldValidation, "UpdateOptions")
        manager = options.field_manager(req.options.fieldManager, "UpdateOptions")
        sent, warnings = body.decode(SCALE_KIND, req.object, mode)
        check_name(sent, req.path.name, req.path.namespace)

        def produce(current: Obj) -> tuple[Obj, list[str]]:
            return _scaled(self.rule, resource, req.path, current, copy_json(sent)), warnings

        updated = await guaranteed_update(ctx, resource, req.path, produce, dry_run=dry_run, accept=render.JSON,
                                          manager=manager,
                                          request_options=create.write_options("UpdateOptions", dry_run, manager))
        return core_pb2.UpdateResponse(object=_answer(self.rule, updated.object, req.accept),
                                       warnings=updated.warnings)

    async def patch(self, ctx: Context, resource: Resource, req: core_pb2.PatchRequest) -> core_pb2.PatchResponse:
        """PATCH /scale: a JSON, merge or strategic merge patch applied to the Scale; server-side apply's
        configuration is a Scale."""
        dry_run = options.dry_run(req.options.dryRun, "PatchOptions")
        mode = options.field_validation(req.options.fieldValidation, "PatchOptions")
        is_apply = req.type == core_pb2.PATCH_TYPE_APPLY
        force = req.options.force if req.options.HasField("force") else None
        manager = options.field_manager(req.options.fieldManager, "PatchOptions", apply=is_apply, force=force)
        if is_apply:
            return await self._apply(ctx, resource, req, manager, dry_run=dry_run, mode=mode)
        patched: Patcher = patcher(SCALE_KIND, req.type, req.patch, strict=mode != "Ignore")

        def produce(current: Obj) -> tuple[Obj, list[str]]:
            scale, warnings = body.typed(SCALE_KIND, patched(of(self.rule, current, _revision(current))), mode)
            _check_patched_name(scale, req.path)
            return _scaled(self.rule, resource, req.path, current, scale), warnings

        updated = await guaranteed_update(ctx, resource, req.path, produce, dry_run=dry_run, accept=render.JSON,
                                          manager=manager)
        return core_pb2.PatchResponse(object=_answer(self.rule, updated.object, req.accept),
                                      warnings=updated.warnings)

    async def _apply(self, ctx: Context, resource: Resource, req: core_pb2.PatchRequest, manager: str, *,
                     dry_run: bool, mode: str) -> core_pb2.PatchResponse:
        """Server-side apply of a Scale: applied to the object as the configuration {spec: {replicas}} of a
        manager writing through subresource "scale", so it owns .spec.replicas and conflicts with whoever else
        does."""
        # Parsed and checked as apply checks any configuration: YAML or JSON, apiVersion autoscaling/v1.
        scale, _ = body.typed(SCALE_KIND, apply.config(SCALE_KIND, req.patch), mode)
        sent_meta = meta.meta(scale)
        for field, value in (("name", req.path.name), ("namespace", req.path.namespace)):
            sent_meta.setdefault(field, value)  # as merged onto the live Scale, which has both
        _raise_if_invalid(req.path.name, scale)
        parent_meta = {k: sent_meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if sent_meta.get(k)}
        parent: Obj = {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": parent_meta}
        _put(parent, self.rule.spec_replicas, (scale.get("spec") or {}).get("replicas", 0))
        as_parent = core_pb2.PatchRequest()
        as_parent.CopyFrom(req)
        as_parent.patch = orjson.dumps(parent)
        as_parent.accept = render.JSON
        applied = await apply.apply(ctx, resource, as_parent, manager, dry_run=dry_run, mode=mode)
        return core_pb2.PatchResponse(object=_answer(self.rule, applied.object, req.accept),
                                      warnings=applied.warnings)


def of(rule: ScaleRule, obj: Obj, resource_version: str) -> Obj:
    """The Scale of an object (scaleFromDeployment and its siblings), typed: zero fields as the Scale prints them."""
    m = meta.meta(obj)
    found = {**{k: m[k] for k in _SCALE_META if k in m}, "resourceVersion": resource_version}
    selector = _at(obj, rule.label_selector)
    if rule.selector == "String":  # a custom resource keeps the query itself (labelSelectorPath)
        query = selector if isinstance(selector, str) else ""
    else:
        if rule.selector == "Set":
            selector = {"matchLabels": selector or {}}
        try:
            query = str(labels.from_label_selector(selector if isinstance(selector, dict) else None))
        except labels.SelectorError as err:  # stored objects were validated; kube answers a 500 here too
            raise errors.internal(str(err)) from None
    scale: Obj = {
        "kind": SCALE.kind, "apiVersion": SCALE_KIND.api_version,
        "metadata": {k: found[k] for k in meta.META_ORDER if k in found},
        "spec": {"replicas": _at(obj, rule.spec_replicas) or 0},
        "status": {"replicas": _at(obj, rule.status_replicas) or 0, "selector": query},
    }
    typed, _ = SCALE_KIND.schema.normalize(scale)
    return {"kind": SCALE.kind, "apiVersion": SCALE_KIND.api_version, **typed}


def read(rule: ScaleRule, value: bytes, revision: int, req: core_pb2.GetRequest) -> core_pb2.RawObject:
    """GET /scale: the Scale of a stored value, as JSON, protobuf, a Table or PartialObjectMetadata."""
    scale = of(rule, render.load(value), str(revision))
    if req.view.view == core_pb2.VIEW_UNSPECIFIED:
        return _raw(scale, req.accept)
    include = views.check(req.view)
    api_version = req.view.api_version or printing.META_V1
    if req.view.view == core_pb2.VIEW_TABLE:
        return views.raw(printing.object_table(SCALE_KIND, scale, str(revision), include_object=include,
                                               api_version=api_version))
    if req.view.view == core_pb2.VIEW_PARTIAL_OBJECT_METADATA:
        return views.raw(printing.partial_object_metadata(scale, str(revision), api_version=api_version))
    raise printing.partial_shape_error(SCALE_KIND, list_requested=True)


def _scaled(rule: ScaleRule, resource: Resource, path: core_pb2.ResourcePath, current: Obj, scale: Obj) -> Obj:
    """The object with the Scale's replicas, and the Scale's resourceVersion as its precondition
    (scaleUpdatedObjectInfo.UpdatedObject): the Scale is validated first, then its uid precondition."""
    _raise_if_invalid(path.name, scale)
    scale_meta, current_meta = meta.meta(scale), meta.meta(current)
    uid = scale_meta.get("uid")
    if uid and uid != current_meta.get("uid"):
        raise errors.conflict(f"{resource.resource}/{SCALE.name}", resource.group, path.name,
                              f"Precondition failed: UID in precondition: {uid}, "
                              f"UID in object meta: {current_meta.get('uid', '')}")
    new: Obj = copy_json(current)
    _put(new, rule.spec_replicas, (scale.get("spec") or {}).get("replicas", 0))
    rv = scale_meta.get("resourceVersion")
    if rv:  # else the current object's: a Scale without one is no precondition, whatever the kind allows
        meta.meta(new)["resourceVersion"] = rv
    return new


def _replicas_from(rule: ScaleRule, obj: Obj, scale: Obj) -> Obj:
    """The object with the replicas of a Scale admission changed (validated as any Scale written)."""
    _raise_if_invalid(str(meta.meta(obj).get("name") or ""), scale)
    new: Obj = copy_json(obj)
    _put(new, rule.spec_replicas, (scale.get("spec") or {}).get("replicas", 0))
    return new


def _raise_if_invalid(name: str, scale: Obj) -> None:
    """autoscaling's ValidateScale: ObjectMeta as a namespaced object's, and replicas >= 0; the 422 names the
    Scale kind and the object's name."""
    m = meta.meta(scale)
    errs = names.validate_object_meta(
        name=_text(m.get("name")), generate_name=_text(m.get("generateName")), namespace=_text(m.get("namespace")),
        namespaced=True, name_fn=names.name_is_dns_subdomain, labels=m.get("labels") or {},
        annotations=m.get("annotations") or {},
    )
    replicas = (scale.get("spec") or {}).get("replicas", 0)
    if replicas < 0:
        errs.append(names.FieldError.invalid("spec.replicas", replicas, "must be greater than or equal to 0"))
    validate.raise_if_invalid(SCALE_KIND, {"metadata": {"name": name}}, errs)


def _check_patched_name(scale: Obj, path: core_pb2.ResourcePath) -> None:
    name = meta.meta(scale).get("name")
    if name != path.name:
        raise errors.bad_request(f"the name of the object ({name or ''}) does not match the name on the URL "
                                 f"({path.name})")


def _revision(obj: Obj) -> str:
    return str(meta.meta(obj).get("resourceVersion", ""))


def _answer(rule: ScaleRule, raw: core_pb2.RawObject, accept: render.Encoding) -> core_pb2.RawObject:
    """The Scale of the object a write answered with (JSON from update's loop), in the encoding asked for."""
    obj: Obj = orjson.loads(raw.data)
    return _raw(of(rule, obj, _revision(obj)), accept)


def _raw(scale: Obj, accept: render.Encoding) -> core_pb2.RawObject:
    if accept == render.PROTOBUF:
        return core_pb2.RawObject(encoding=render.PROTOBUF, data=SCALE_KIND.schema.to_proto(scale))
    return core_pb2.RawObject(encoding=render.JSON, data=render.go_json(scale))


def _at(obj: Obj, path: tuple[str, ...]) -> object:
    """The value at a path of nested objects (None when any step is missing)."""
    value: object = obj
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value if path else None


def _put(obj: Obj, path: tuple[str, ...], value: object) -> None:
    for part in path[:-1]:
        obj = obj.setdefault(part, {})
    obj[path[-1]] = value
