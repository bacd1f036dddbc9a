"""Patch: a JSON patch, merge patch or strategic merge patch applied to the current object, then stored
as an update (same preconditions, validation and no-op rule); server-side apply is server/objects/apply.py.

The patch applies to the object as clients see it (kind, apiVersion, resourceVersion included),
so a patch that sets metadata.resourceVersion is a precondition (409 when stale), as `kubectl
diff` relies on. It is applied again to the newest object if a concurrent write wins the race.
The patched object must keep the name and namespace of the URL (400 otherwise: kube-apiserver's
checkName), so no patch renames or moves what is stored under a key.
"""

from __future__ import annotations

import json
from typing import Any

import jsonpatch
import jsonpointer
import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.machinery.codec import depth, goscan
from server.machinery.codec.gojson import json_kind
from server.machinery.gofmt import go_v
from server.machinery.patch import strategic
from server.machinery.patch.values import copy_json
from server.machinery.schema import JsonSchema
from server.machinery.values import Obj
from server.objects import apply, body, options
from server.objects.context import Context
from server.objects.resolve import resolve
from server.objects.update import check_patched_name, guaranteed_update
from server.registry.resources import Resource

_TYPES = {
    core_pb2.PATCH_TYPE_JSON: "application/json-patch+json",
    core_pb2.PATCH_TYPE_MERGE: "application/merge-patch+json",
    core_pb2.PATCH_TYPE_STRATEGIC_MERGE: "application/strategic-merge-patch+json",
    core_pb2.PATCH_TYPE_APPLY: "application/apply-patch+yaml",
}


async def patch(ctx: Context, req: core_pb2.PatchRequest) -> core_pb2.PatchResponse:
    resource = resolve(ctx.registry, req.path, "patch")
    handler = resource.handlers_of(req.path.subresource).patch
    if handler is not None:  # a subresource's own patch (/scale), written through guaranteed_update
        return await handler(ctx, resource, req)
    dry_run = options.dry_run(req.options.dryRun, "PatchOptions")
    mode = options.field_validation(req.options.fieldValidation, "PatchOptions")
    is_apply = req.type == core_pb2.PATCH_TYPE_APPLY
    force = req.options.force if req.options.HasField("force") else None
    manager = options.field_manager(req.options.fieldManager, "PatchOptions", apply=is_apply, force=force)
    if is_apply:
        return await apply.apply(ctx, resource, req, manager, dry_run=dry_run, mode=mode)
    patched = patcher(resource, req.type, req.patch, strict=mode != "Ignore")
    problems = _strict_problems(req.type, req.patch) if mode != "Ignore" else []
    strategic_patch = req.type == core_pb2.PATCH_TYPE_STRATEGIC_MERGE

    def produce(current: Obj) -> tuple[Obj, list[str]]:
        result = patched(current)

        def shown() -> str:  # kube's value for the 422: the strategic patch as Go prints it, else the patched JSON
            if strategic_patch:
                return go_v(json.loads(req.patch))
            return json.dumps(result, ensure_ascii=False, separators=(",", ":"), sort_keys=True)

        obj, warnings = body.patched(resource, result, mode, problems=problems, shown=shown, by_text=strategic_patch)
        check_patched_name(obj, req.path)
        return obj, warnings

    updated = await guaranteed_update(
        ctx, resource, req.path, produce, dry_run=dry_run, accept=req.accept, manager=manager)
    return core_pb2.PatchResponse(object=updated.object, warnings=updated.warnings)


_JSON_PATCH_FIELDS = ("op", "path", "from", "value")  # apimachinery's jsonPatchOp


def _strict_problems(kind: int, data: bytes) -> list[str]:
    """What kjson's strict decoding finds in the patch body itself: keys repeated in one object, and
    for a JSON patch the operations' unknown and repeated fields ("json patch unknown field "[0].foo"")."""
    try:
        document = json.loads(data)
    except ValueError:
        return []  # the patcher words the malformed body
    keys = body.keys(data, document)
    if kind != core_pb2.PATCH_TYPE_JSON:
        return [f'duplicate field "{path}"' for path, again in keys if again]
    out: list[str] = []
    if not isinstance(document, list):
        return out
    if not keys:
        for index, operation in enumerate(document):
            if isinstance(operation, dict):
                out.extend(f'json patch unknown field "[{index}].{key}"'
                           for key in operation if key not in _JSON_PATCH_FIELDS)
        return out
    reported: set[str] = set()
    for path, again in keys:
        if path.count(".") != 1:
            continue  # inside an operation's value: a map, which any key fits
        field = path.rsplit(".", 1)[1]
        if field not in _JSON_PATCH_FIELDS:
            if path not in reported:
                out.append(f'json patch unknown field "{path}"')
                reported.add(path)
        elif again:
            out.append(f'json patch duplicate field "{path}"')
    return out


def patcher(resource: Resource, kind: int, data: bytes, *, strict: bool = True) -> Any:
    """The function that applies this patch to an object; the patch is parsed once, up front (400 if malformed)."""
    # Strategic merge patch needs a built-in kind's merge keys: never for custom resources, as in Kubernetes
    # (even those served in protobuf, server/objects/descriptors.py).
    strategic_ok = bool(resource.schema.proto_message) and not isinstance(resource.schema, JsonSchema)
    accepted = [t for k, t in _TYPES.items() if k != core_pb2.PATCH_TYPE_STRATEGIC_MERGE or strategic_ok]
    if kind == core_pb2.PATCH_TYPE_JSON:
        operations = parse_json_patch(data, strict=strict)
        return lambda current: apply_json_patch(operations, current)
    if kind == core_pb2.PATCH_TYPE_MERGE:
        document = _object(data, merge=True)
        return lambda current: strategic.merge_patch(current, document)
    if kind == core_pb2.PATCH_TYPE_STRATEGIC_MERGE and strategic_ok:
        document = _object(data, merge=False)
        descriptor = resource.schema.descriptor
        return lambda current: _apply_strategic(current, document, descriptor)
    raise errors.ApiError(errors.status(
        415, "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted),
        with_details=False))


class JsonPatchFailed(Exception):
    """A JSON patch that does not apply to the document; str(): what failed, in evanphx/json-patch's words where
    they are known."""


# An operation as a patch of its own, or the failure applying it meets.
JsonPatchOperation = jsonpatch.JsonPatch | JsonPatchFailed


def parse_json_patch(data: bytes, *, strict: bool = True) -> list[tuple[Obj, JsonPatchOperation]]:
    """An application/json-patch+json body as its operations, each beside a patch of that operation
    alone, so a failure can name the operation that failed; 400 when it is no list of operations, in the words
    of what reads it first in kube 1.28: with field validation (`strict`, Strict or Warn) kjson decoding it into
    []handlers.jsonPatchOp behind "error decoding patch: ", without it evanphx/json-patch's DecodePatch. A null
    document is a patch of no operations."""
    def refused(problem: str) -> errors.ApiError:
        return errors.bad_request(f"error decoding patch: {problem}" if strict else problem)

    try:
        document = json.loads(data, parse_constant=_not_json)
    except RecursionError:
        raise _too_deep("invalid character '[' exceeded max depth") from None
    except ValueError as err:
        problem = goscan.syntax_error(data)
        if problem is not None:
            raise refused(problem) from None
        try:  # Go reads what Python would not (a string that is not UTF-8)
            document = json.loads(data.decode("utf-8", "capstan-go-replace"))
        except (ValueError, RecursionError):
            raise refused(str(err)) from None
    _check_depth(data, document)
    if document is None:
        return []
    patch_type, op_type = ("[]handlers.jsonPatchOp", "handlers.jsonPatchOp") if strict else \
        ("jsonpatch.Patch", "jsonpatch.Operation")
    if not isinstance(document, list):
        raise refused(f"json: cannot unmarshal {json_kind(document)} into Go value of type {patch_type}")
    for operation in document:
        if operation is not None and not isinstance(operation, dict):
            raise refused(f"json: cannot unmarshal {json_kind(operation)} into Go value of type {op_type}")
        if strict and operation:
            for name in ("op", "path", "from"):
                value = operation.get(name)
                if value is not None and not isinstance(value, str):
                    raise refused(f"json: cannot unmarshal {json_kind(value)} into Go struct field "
                                  f"jsonPatchOp.{name} of type string")
    return [(operation, _one_operation(operation)) for operation in document]


def _one_operation(operation: Any) -> jsonpatch.JsonPatch | JsonPatchFailed:
    """One operation as a patch of its own, or the failure it meets when applied: evanphx/json-patch decodes
    any list of objects and finds an unknown `op` or a bad pointer only when it applies them (kube 1.28's 422
    for a patch request, an internal error for a webhook's patch), after the object was read."""
    try:
        return jsonpatch.JsonPatch([operation])
    except (jsonpatch.InvalidJsonPatch, jsonpointer.JsonPointerException) as err:
        op = operation.get("op") if isinstance(operation, dict) else None
        if isinstance(err, jsonpatch.InvalidJsonPatch):
            return JsonPatchFailed(f"Unexpected kind: {op if isinstance(op, str) and op else 'unknown'}")
        return JsonPatchFailed(str(err))


def _not_json(constant: str) -> Any:
    """NaN and Infinity, which Python's json reads and Go's does not."""
    raise ValueError(f"{constant} is not JSON")


def apply_json_patch(operations: list[tuple[Obj, JsonPatchOperation]], current: Obj) -> Obj:
    """current with the operations applied in order (current untouched); 422 Invalid when one fails, as
    kube-apiserver 1.28 answers it: NewGenericServerResponse's wording, not as an unexpected response, so with no
    causes (details {}) and not the patch library's words."""
    try:
        return json_patched(operations, current)
    except JsonPatchFailed:
        status = errors.status(422, "Invalid", "the server rejected our request due to an error in our request")
        status.details.SetInParent()  # StatusDetails with nothing in it: {}
        raise errors.ApiError(status) from None


def json_patched(operations: list[tuple[Obj, JsonPatchOperation]], current: Obj) -> Obj:
    """current with the operations applied in order (current untouched); JsonPatchFailed when one fails."""
    result: Any = copy_json(current)
    for operation, one in operations:
        if isinstance(one, JsonPatchFailed):
            raise one
        try:
            result = one.apply(result, in_place=True)
        except jsonpatch.JsonPatchTestFailed:
            raise JsonPatchFailed(_test_failed(operation["path"], result)) from None
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as err:
            raise JsonPatchFailed(str(err)) from None
    if not isinstance(result, dict):
        raise JsonPatchFailed("the patched document is not an object")
    return result


def _test_failed(path: str, document: Any) -> str:
    """evanphx/json-patch's words for a failed `test`:

        testing value /data/k failed: test failed                       the value differs, or the key is absent
        test operation does not apply: is missing path: /a/b: missing value   the parent does not exist
    """
    try:
        jsonpointer.JsonPointer(path).to_last(document)
    except jsonpointer.JsonPointerException:
        return f"test operation does not apply: is missing path: {path}: missing value"
    return f"testing value {path} failed: test failed"


def _apply_strategic(current: Obj, document: Obj, descriptor: Any) -> Obj:
    try:
        return strategic.apply_strategic(current, document, descriptor)
    except strategic.PatchError as err:
        raise errors.ApiError(errors.status(err.code, err.reason, str(err), with_details=False)) from None


def _object(data: bytes, *, merge: bool) -> Obj:
    """A merge (`merge`) or strategic merge patch's document. One that is not an object is refused as kube 1.28
    refuses it: encoding/json's words for the JSON type it is (a merge patch's behind "error decoding patch: ",
    as its field validation reads it first); a null strategic merge patch changes nothing, a null merge patch is
    evanphx/json-patch's "Invalid JSON Patch"."""
    try:
        document = goscan.loads(data)
    except goscan.Refused as err:
        raise errors.bad_request(f"error decoding patch: {err.message}" if merge else err.message) from None
    except orjson.JSONDecodeError as err:
        if str(err).startswith("depth limit exceeded"):
            raise _too_deep("invalid character '{' exceeded max depth") from None
        raise errors.bad_request(f"error decoding patch: {err}") from None
    _check_depth(data, document)
    if document is None:
        if merge:
            raise errors.bad_request("Invalid JSON Patch")
        return {}
    if not isinstance(document, dict):
        refused = f"json: cannot unmarshal {json_kind(document)} into Go value of type map[string]interface {{}}"
        raise errors.bad_request(f"error decoding patch: {refused}" if merge else refused)
    return document


def _check_depth(data: bytes, document: Any) -> None:
    """A patch nested past depth.MAX_DEPTH is refused before anything walks it (never a RecursionError)."""
    problem = depth.exceeded_in(data, document)
    if problem is not None:
        raise _too_deep(problem)


def _too_deep(problem: str) -> errors.ApiError:
    return errors.bad_request(f"error decoding patch: {problem}")
