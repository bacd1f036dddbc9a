"""What kube-apiserver answers over HTTP, written out so the tests compare against it, not against us.

Every builder returns the whole JSON document (Status bodies with kind, apiVersion and an empty
metadata, in kube's member order), and names the apiserver code that produces it.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any

Obj = dict[str, Any]

# The media types as kube-apiserver lists them in its 406 and 415 answers.
NOT_ACCEPTABLE = (
    "only the following media types are accepted: "
    "application/json, application/yaml, application/vnd.kubernetes.protobuf"
)
NOT_STREAMABLE = (
    "only the following media types are accepted: "
    "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
)
UNSUPPORTED_BODY = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json, application/yaml, application/vnd.kubernetes.protobuf"
)
# endpoints/handlers/finisher: apierrors.NewTimeoutError(... context.DeadlineExceeded, 0)
DEADLINE_EXCEEDED = "Timeout: request did not complete within requested timeout - context deadline exceeded"

RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def status(code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    """A Failure Status as kube-apiserver writes it: kind, apiVersion, metadata, status, message,
    reason, details, code; details only when the error has them (omitempty)."""
    out: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message}
    if reason:
        out["reason"] = reason
    if details is not None:
        out["details"] = details
    out["code"] = code
    return out


def not_found_path() -> Obj:
    """go-restful's 404 of a path under its web services that no route takes (NewGenericServerResponse: empty
    details)."""
    return status(404, "NotFound", "the server could not find the requested resource", {})


def method_not_allowed() -> Obj:
    """go-restful's 405 through ServiceErrorHandler: NewGenericServerResponse(405, ...) with empty details."""
    return status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


def not_found(resource: str, name: str, group: str = "") -> Obj:
    """errors.NewNotFound(qualifiedResource, name): the message names resource.group, details split them."""
    qualified = f"{resource}.{group}" if group else resource
    details = {"name": name, "group": group, "kind": resource} if group else {"name": name, "kind": resource}
    return status(404, "NotFound", f'{qualified} "{name}" not found', details)


def already_exists(resource: str, name: str) -> Obj:
    return status(409, "AlreadyExists", f'{resource} "{name}" already exists', {"name": name, "kind": resource})


def bad_request(message: str) -> Obj:
    """errors.NewBadRequest: no details."""
    return status(400, "BadRequest", message)


def invalid_option(kind: str, field: str, reason: str, detail: str) -> Obj:
    """errors.NewInvalid(meta.k8s.io <kind>, "", one field error), as option validation raises it."""
    return status(422, "Invalid", f'{kind}.meta.k8s.io "" is invalid: {field}: {detail}', {
        "group": "meta.k8s.io", "kind": kind,
        "causes": [{"reason": reason, "message": detail, "field": field}],
    })


def success(name: str, kind: str, uid: str) -> Obj:
    """The Success Status of genericregistry.Store.Delete for an object deleted at once."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": name, "kind": kind, "uid": uid}}


def stamped(obj: Obj) -> Obj:
    """The server-set uid, creationTimestamp and managedFields of obj, checked for their form, to put in
    an expectation (tests/server/objects/test_managed_fields.py checks managedFields' content)."""
    meta = obj["metadata"]
    uuid.UUID(meta["uid"])
    assert RFC3339.fullmatch(meta["creationTimestamp"]), meta["creationTimestamp"]
    datetime.fromisoformat(meta["creationTimestamp"].replace("Z", "+00:00"))
    stamps = {"uid": meta["uid"], "creationTimestamp": meta["creationTimestamp"]}
    if "managedFields" in meta:
        assert all(RFC3339.fullmatch(entry["time"]) for entry in meta["managedFields"]), meta["managedFields"]
        stamps["managedFields"] = meta["managedFields"]
    return stamps


def managed(stamps: Obj) -> Obj:
    """{"managedFields": ...} when the stamps carry them, else {}: to spread into metadata."""
    return {"managedFields": stamps["managedFields"]} if "managedFields" in stamps else {}


def config_map(name: str, rv: int | str, stamps: Obj, *, namespace: str = "default", typed: bool = True,
               **fields: Any) -> Obj:
    """A ConfigMap as kube-apiserver prints it (typed=False: as a list item, without kind and apiVersion)."""
    meta: Obj = {"name": name, "namespace": namespace, "uid": stamps["uid"], "resourceVersion": str(rv),
                 "creationTimestamp": stamps["creationTimestamp"], **managed(stamps)}
    head: Obj = {"kind": "ConfigMap", "apiVersion": "v1"} if typed else {}
    return {**head, "metadata": meta, **fields}
