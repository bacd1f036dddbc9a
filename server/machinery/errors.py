"""The core's errors: every failure is a Kubernetes Status, raised as ApiError.

Builders here produce exactly the Status kube-apiserver returns (code, reason,
message, details) — apimachinery's `errors.New*` family — so the gateway and any
gRPC client see the same answer. `to_grpc_status` is the one mapping from a
Status to a gRPC status code; the Status itself travels in the rich error details.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import grpc
from google.protobuf import any_pb2
from google.rpc import status_pb2

from capstan.api.meta.v1 import meta_pb2

# HTTP code -> gRPC code. Clients that only look at the gRPC code get the nearest
# meaning; the exact answer is the Status in the details.
GRPC_CODES: dict[int, grpc.StatusCode] = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    405: grpc.StatusCode.UNIMPLEMENTED,
    406: grpc.StatusCode.INVALID_ARGUMENT,
    409: grpc.StatusCode.ALREADY_EXISTS,  # AlreadyExists; Conflict is ABORTED (below)
    410: grpc.StatusCode.OUT_OF_RANGE,  # history compacted, as etcd answers
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,
    415: grpc.StatusCode.INVALID_ARGUMENT,
    422: grpc.StatusCode.INVALID_ARGUMENT,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    500: grpc.StatusCode.INTERNAL,
    503: grpc.StatusCode.UNAVAILABLE,
    504: grpc.StatusCode.DEADLINE_EXCEEDED,
    # over the storage quota, as etcd answers it (server/objects/storeerrors.py)
    507: grpc.StatusCode.RESOURCE_EXHAUSTED,
}

MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


@dataclass(frozen=True, slots=True)
class Cause:
    reason: str
    message: str
    field: str = ""


class ApiError(Exception):
    """A request failed; `status` is the Kubernetes Status to answer with."""

    def __init__(self, status: meta_pb2.Status) -> None:
        super().__init__(status.message)
        self.status = status

    @property
    def code(self) -> int:
        return self.status.code

    @property
    def reason(self) -> str:
        return self.status.reason


def status(
    code: int,
    reason: str,
    message: str,
    *,
    name: str = "",
    group: str = "",
    kind: str = "",
    causes: Sequence[Cause] = (),
    retry_after: int = 0,
    with_details: bool = True,
) -> meta_pb2.Status:
    result = meta_pb2.Status(status="Failure", message=message, reason=reason, code=code)
    result.metadata.SetInParent()
    if with_details:
        details = result.details
        if name:
            details.name = name
        if group:
            details.group = group
        if kind:
            details.kind = kind
        for cause in causes:
            entry = details.causes.add(reason=cause.reason, message=cause.message)
            if cause.field:
                entry.field = cause.field
        if retry_after:
            details.retryAfterSeconds = retry_after
    return result


def qualified(resource: str, group: str) -> str:
    """`configmaps` or `deployments.apps`, as Kubernetes names a resource in messages."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        status(404, "NotFound", f'{qualified(resource, group)} "{name}" not found', name=name, group=group,
               kind=resource)
    )


def resource_not_found() -> ApiError:
    """404 for a path that names no served resource (kube-apiserver's catch-all answer)."""
    return ApiError(status(404, "NotFound", "the server could not find the requested resource"))


def already_exists(resource: str, group: str, name: str, *, being_deleted: bool = False) -> ApiError:
    """409 AlreadyExists; kube-apiserver prefixes "object is being deleted: " when the holder is going away."""
    prefix = "object is being deleted: " if being_deleted else ""
    return ApiError(
        status(409, "AlreadyExists", f'{prefix}{qualified(resource, group)} "{name}" already exists', name=name,
               group=group, kind=resource)
    )


def generate_name_conflict(resource: str, group: str, name: str) -> ApiError:
    """409 when every generated name tried was taken (errors.NewGenerateNameConflict)."""
    message = (f'{qualified(resource, group)} "{name}" already exists, '
               "the server was not able to generate a unique name for the object")
    return ApiError(status(409, "AlreadyExists", message, name=name, group=group, kind=resource, retry_after=1))


def method_not_allowed() -> ApiError:
    """405 for a verb a resource does not serve: kube-apiserver has no route for it, and answers generically."""
    result = status(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    result.details.SetInParent()
    return ApiError(result)


def conflict(resource: str, group: str, name: str, detail: str = MODIFIED) -> ApiError:
    return ApiError(
        status(409, "Conflict", f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {detail}',
               name=name, group=group, kind=resource)
    )


def invalid(kind: str, group: str, name: str, message: str, causes: Sequence[Cause]) -> ApiError:
    """422: `message` is the aggregated field errors, e.g. `metadata.name: Required value: ...`."""
    return ApiError(
        status(422, "Invalid", f'{kind}{"." + group if group else ""} "{name}" is invalid: {message}', name=name,
               group=group, kind=kind, causes=causes)
    )


def bad_request(message: str) -> ApiError:
    return ApiError(status(400, "BadRequest", message, with_details=False))


def method_not_supported(resource: str, group: str, action: str) -> ApiError:
    message = f'{action} is not supported on resources of kind "{qualified(resource, group)}"'
    return ApiError(status(405, "MethodNotAllowed", message, group=group, kind=resource))


def forbidden(resource: str, group: str, name: str, reason: str, causes: Sequence[Cause] = ()) -> ApiError:
    return ApiError(
        status(403, "Forbidden", f'{qualified(resource, group)} "{name}" is forbidden: {reason}', name=name,
               group=group, kind=resource, causes=causes)
    )


def expired(message: str) -> ApiError:
    """410 Expired: a resourceVersion or continue token older than retained history."""
    return ApiError(status(410, "Expired", message, with_details=False))


def gone(message: str) -> ApiError:
    return ApiError(status(410, "Gone", message, with_details=False))


def too_large_resource_version(requested: int, current: int, retry_after: int = 1) -> ApiError:
    """504 with Retry-After: the client asked for a revision the store has not reached."""
    return ApiError(
        status(504, "Timeout", f"Timeout: Too large resource version: {requested}, current: {current}",
               causes=[Cause("ResourceVersionTooLarge", "Too large resource version")], retry_after=retry_after)
    )


def internal(message: str) -> ApiError:
    return ApiError(
        status(500, "InternalError", f"Internal error occurred: {message}",
               causes=[Cause("", message)])
    )


def service_unavailable(message: str) -> ApiError:
    return ApiError(status(503, "ServiceUnavailable", message, with_details=False))


def to_grpc_status(error: ApiError) -> status_pb2.Status:
    """The google.rpc.Status for an ApiError: a gRPC code plus the Kubernetes Status as detail."""
    code = GRPC_CODES.get(error.code, grpc.StatusCode.UNKNOWN)
    if error.code == 409 and error.reason == "Conflict":
        code = grpc.StatusCode.ABORTED
    detail = any_pb2.Any()
    detail.Pack(error.status)
    return status_pb2.Status(code=code.value[0], message=error.status.message, details=[detail])
