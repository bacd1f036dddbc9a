"""Patch: a JSON patch, merge patch or strategic merge patch applied to the current object, then stored
as an update (same preconditions, validation and no-op rule); server-side apply is server/objects/apply.py.

The patch applies to the object as clients see it (kind, apiVersion, resourceVersion included),
so a patch that sets metadata.resourceVersion is a precondition (409 when stale), as `kubectl
diff` relies on. It is applied again to the newest object if a concurrent write wins the race.
"""

from __future__ import annotations

import json
from typing import Any

import jsonpatch
import jsonpointer
import orjson

from capstan.core.v1 import core_pb2
from server import errors
from server.objects import apply, body, options
from server.objects.context import Context
from server.objects.resolve import resolve
from server.objects.update import guaranteed_update
from server.patch import strategic
from server.registry import Obj, Resource

_TYPES = {
    core_pb2.PATCH_TYPE_JSON: "application/json-patch+json",
    core_pb2.PATCH_TYPE_MERGE: "application/merge-patch+json",
    core_pb2.PATCH_TYPE_STRATEGIC_MERGE: "application/strategic-merge-patch+json",
    core_pb2.PATCH_TYPE_APPLY: "application/apply-patch+yaml",
}


async def patch(ctx: Context, req: core_pb2.PatchRequest) -> core_pb2.PatchResponse:
    resource = resolve(ctx.registry, req.path, "patch")
    dry_run = options.dry_run(req.options.dryRun, "PatchOptions")
    mode = options.field_validation(req.options.fieldValidation, "PatchOptions")
    is_apply = req.type == core_pb2.PATCH_TYPE_APPLY
    force = req.options.force if req.options.HasField("force") else None
    manager = options.field_manager(req.options.fieldManager, "PatchOptions", apply=is_apply, force=force)
    if is_apply:
        return await apply.apply(ctx, resource, req, manager, dry_run=dry_run, mode=mode)
    patched = _patcher(resource, req.type, req.patch)

    def produce(current: Obj) -> tuple[Obj, list[str]]:
        return body.typed(resource, patched(current), mode)

    updated = await guaranteed_update(
        ctx, resource, req.path, produce, dry_run=dry_run, accept=req.accept, manager=manager)
    return core_pb2.PatchResponse(object=updated.object, warnings=updated.warnings)


def _patcher(resource: Resource, kind: int, data: bytes) -> Any:
    """The function that applies this patch to an object; the patch is parsed once, up front (400 if malformed)."""
    accepted = [t for k, t in _TYPES.items()
                if k != core_pb2.PATCH_TYPE_STRATEGIC_MERGE or resource.schema.proto_message]
    if kind == core_pb2.PATCH_TYPE_JSON:
        operations = _json_patch(data)
        return lambda current: _apply_json_patch(operations, current)
    if kind == core_pb2.PATCH_TYPE_MERGE:
        document = _object(data)
        return lambda current: strategic.merge_patch(current, document)
    if kind == core_pb2.PATCH_TYPE_STRATEGIC_MERGE and resource.schema.proto_message:
        document = _object(data)
        descriptor = resource.schema.descriptor
        return lambda current: _apply_strategic(current, document, descriptor)
    raise errors.ApiError(errors.status(
        415, "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted),
        with_details=False))


def _json_patch(data: bytes) -> jsonpatch.JsonPatch:
    try:
        document = json.loads(data)
    except ValueError as err:
        raise errors.bad_request(f"error decoding patch: {err}") from None
    if not isinstance(document, list):
        raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    try:
        return jsonpatch.JsonPatch(document)
    except (jsonpatch.InvalidJsonPatch, jsonpointer.JsonPointerException) as err:
        raise errors.bad_request(f"invalid JSON patch: {err}") from None


def _apply_json_patch(operations: jsonpatch.JsonPatch, current: Obj) -> Obj:
    try:
        result = operations.apply(current)
    except jsonpatch.JsonPatchTestFailed as err:
        raise _rejected(f"testing value failed: {err}") from None
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as err:
        raise _rejected(str(err)) from None
    if not isinstance(result, dict):
        raise _rejected("the patched document is not an object")
    return result


def _apply_strategic(current: Obj, document: Obj, descriptor: Any) -> Obj:
    try:
        return strategic.apply_strategic(current, document, descriptor)
    except strategic.PatchError as err:
        raise errors.ApiError(errors.status(err.code, err.reason, str(err), with_details=False)) from None


def _object(data: bytes) -> Obj:
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise errors.bad_request(f"error decoding patch: {err}") from None
    if not isinstance(document, dict):
        raise errors.bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
    return document


def _rejected(detail: str) -> errors.ApiError:
    """422 for a JSON patch that does not apply: kube-apiserver's NewGenericServerResponse wording."""
    return errors.ApiError(errors.status(
        422, "Invalid", "the server rejected our request due to an error in our request",
        causes=[errors.Cause("UnexpectedServerResponse", detail)]))
