"""Server-side apply (application/apply-patch+yaml): a manager's configuration merged onto the object,
its fields owned in metadata.managedFields, as kube-apiserver applies it.

The body is YAML or JSON naming the kind's apiVersion and kind. An object that does not exist is
created from the configuration (201). Otherwise the configuration is merged onto the live object;
fields the manager applied before and left out now are removed when nobody else owns them; a
change to a field another manager owns is 409 Conflict with one cause per field, unless force
moves the field to this manager. Example conflict:

    Apply failed with 1 conflict: conflict with "alpha": .data.k
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.machinery.codec import depth, yamlread
from server.machinery.codec.gojson import json_kind
from server.machinery.fields import updater
from server.machinery.fields.managers import APPLY, Managed, Owner
from server.machinery.fields.path import to_string
from server.machinery.patch.values import copy_json
from server.machinery.values import Obj
from server.objects import body, create, lastapplied, managed
from server.objects.context import Context
from server.objects.storeerrors import store_call
from server.objects.update import check_patched_name, guaranteed_update
from server.registry.resources import Resource


async def apply(ctx: Context, resource: Resource, req: core_pb2.PatchRequest, manager: str, *, dry_run: bool,
                mode: str) -> core_pb2.PatchResponse:
    document = _read(req.patch)
    config = _config(resource, document.value)
    _check_declared(resource, config)
    duplicates = document.duplicates if mode != "Ignore" else ()
    warnings = list(duplicates) if mode == "Warn" else []
    owner = Owner.of(manager, APPLY, resource.api_version, req.path.subresource)
    force = req.options.force

    def merged(live: Obj, zero: Obj) -> Obj:
        ignored = managed.ignored(resource, req.path.subresource, live, config)
        shape = managed.shape(resource)

        def run(forced: bool) -> tuple[Obj, Managed]:
            return updater.apply(
                live, copy_json(config), shape, managed.stored_managers(live), owner, resource.api_version,
                ignored, managed.write_time(req.path.subresource), force=forced, zero=zero,
                normalize=lambda obj: body.typed(resource, obj, "Ignore")[0])

        try:
            new, owners = run(force)
        except updater.Conflicts as err:
            conflicts = err.conflicts
            if manager == lastapplied.KUBECTL:  # kubectl's own fields, from its client-side apply
                allowed = lastapplied.allowed_conflicts(live, shape)
                conflicts = [(o, p) for o, p in conflicts if not allowed.has(p)]
            if conflicts:
                raise _conflict(updater.Conflicts(conflicts)) from None
            new, owners = run(True)
        managed.write(new, owners)  # new is the schema's fresh normalization: changing it is safe
        if manager == lastapplied.KUBECTL:
            lastapplied.record(new, config)
        if duplicates and mode == "Strict":  # kube checks the YAML strictly once the apply itself succeeded
            raise errors.bad_request("error strict decoding YAML: error converting YAML to JSON: "
                                     + document.strict_error)
        check_patched_name(new, req.path)
        return new

    got = await store_call(ctx.store.get(resource.key(req.path.namespace, req.path.name)))
    if got.kv is None and not req.path.subresource:
        zero = copy.deepcopy(managed.zero(resource))  # the new object starts as it, and creating changes it
        created = await create.create_object(
            ctx, resource, merged(zero, zero), req.path.namespace, manager=None, dry_run=dry_run,
            accept=req.accept, warnings=warnings,
            request_options=create.write_options("PatchOptions", dry_run, req.options.fieldManager,
                                                 force=req.options.force))
        return core_pb2.PatchResponse(object=created.object, warnings=created.warnings, created=True)
    shared_zero = managed.zero(resource)  # only read when an object exists: what it held before anyone applied
    updated = await guaranteed_update(ctx, resource, req.path, lambda live: (merged(live, shared_zero), warnings),
                                      dry_run=dry_run, accept=req.accept, manager=None,
                                      request_options=create.write_options(
                                          "PatchOptions", dry_run, req.options.fieldManager, force=req.options.force))
    return core_pb2.PatchResponse(object=updated.object, warnings=updated.warnings)


def _check_declared(resource: Resource, config: Obj) -> None:
    """A configuration setting a field the kind does not declare cannot be applied, whatever
    fieldValidation says: structured-merge-diff cannot type it. Its validating walk leaves a map at
    its first undeclared field, so each map names at most one, e.g.

        failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.foo:
        field not declared in schema                                                 (one line)

    kube-apiserver 1.28 answers this as a 500 without a reason (the field manager's plain error);
    Capstan answers it as 400 BadRequest, deliberately: it is the client's input that is wrong."""
    _, unknown = body.normalize(resource, config)
    if not unknown:
        return
    first: dict[str, str] = {}
    for path in unknown:
        first.setdefault(path[:max(path.rfind("."), path.rfind("["), 0)], path)
    problems = [f".{path}: field not declared in schema" for path in first.values()]
    message = problems[0] if len(problems) == 1 else "errors:\n  " + "\n  ".join(problems)
    m = config.get("metadata")
    m = m if isinstance(m, dict) else {}
    group, _, version = resource.api_version.rpartition("/")
    raise errors.bad_request(
        f"failed to create typed patch object ({m.get('namespace') or ''}/{m.get('name') or ''}; "
        f"{group}/{version}, Kind={resource.kind}): {message}")


def _read(data: bytes) -> yamlread.Document:
    """The body as sigs.k8s.io/yaml.Unmarshal reads it into a map, and the keys it repeats.

    JSON is YAML: a JSON body orjson refuses (a trailing comma, say) is read again by the YAML
    reader before it is refused, and a JSON body that may repeat a key (more `":` than keys) is
    read by it too, for the `line 9: key "foo" already set in map` kube-apiserver reports."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        value = None
    else:
        if depth.exceeded_in(data, value) is None and body.repeats_no_key(data, value):  # else YAML refuses it
            return yamlread.Document(value)
    try:
        return yamlread.read(data)
    except yamlread.YAMLError as err:
        raise errors.bad_request(f"error decoding YAML: {err.converting}") from None


def _config(resource: Resource, value: Any) -> Obj:
    """The apply configuration: an object of this kind's apiVersion (null is an empty one), without managedFields."""
    config = {} if value is None else value
    if not isinstance(config, dict):
        raise errors.bad_request("error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot "
                                 f"unmarshal {json_kind(config)} into Go value of type map[string]interface {{}}")
    api_version = config.get("apiVersion")
    if api_version != resource.api_version:
        raise errors.bad_request(
            "Incorrect version specified in apply patch. Specified patch version: "
            f"{api_version or ''}, expected: {resource.api_version}")
    metadata = config.get("metadata")
    if isinstance(metadata, dict) and metadata.get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    return config


def config(resource: Resource, data: bytes) -> Obj:
    """An apply body read and checked as a configuration of resource's kind."""
    return _config(resource, _read(data).value)


def _conflict(err: updater.Conflicts) -> errors.ApiError:
    """409 with one FieldManagerConflict cause per field (apimachinery's NewConflictError)."""
    causes = [errors.Cause("FieldManagerConflict", f"conflict with {owner.describe()}", to_string(path))
              for owner, path in err.conflicts]
    if len(err.conflicts) == 1:
        owner, path = err.conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {owner.describe()}: {to_string(path)}"
    else:
        lines: list[str] = []
        by_owner: dict[str, list[str]] = {}
        for owner, path in err.conflicts:
            by_owner.setdefault(owner.describe(), []).append(to_string(path))
        for name in sorted(by_owner):
            lines.append(f"conflicts with {name}:")
            lines.extend(f"- {p}" for p in by_owner[name])
        message = f"Apply failed with {len(err.conflicts)} conflicts: " + "\n".join(lines)
    return errors.ApiError(errors.status(409, "Conflict", message, causes=causes))
