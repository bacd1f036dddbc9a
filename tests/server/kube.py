"""What kube-apiserver answers, written out from its source so the tests compare against it, not against us.

Each builder names the apimachinery/apiserver function whose Status it reproduces. The
dicts are kube-apiserver's JSON Status without kind/apiVersion (the gRPC details carry
the Status message, which has neither); empty fields are omitted as JSON's omitempty does.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

# k8s.io/apimachinery/pkg/util/validation: IsDNS1123Subdomain / IsDNS1123Label messages, with
# RegexError's quirk of two spaces before " or ".
DNS1123_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1123_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
# storage.OptimisticLockErrorMsg
MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"
# core/v1 ValidateConfigMapUpdate / ValidateSecretUpdate
IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"
# etcd3/errors.go: expired list and continue messages
EXPIRED_LIST = "The resourceVersion for the provided list is too old."
EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)
# apiserver's go-restful ServiceErrorHandler: NewGenericServerResponse(405, ...) for a verb without a route
METHOD_NOT_ALLOWED = "the server does not allow this method on the requested resource"


def go_quote(s: str) -> str:
    """Go's %q for the printable ASCII the tests use."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def failure(code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    status: Obj = {"metadata": {}, "status": "Failure", "message": message, "code": code}
    if reason:
        status["reason"] = reason
    if details is not None:
        status["details"] = details
    return status


def details(*, name: str = "", group: str = "", kind: str = "", **extra: Any) -> Obj:
    out: Obj = {k: v for k, v in (("name", name), ("group", group), ("kind", kind)) if v}
    out.update(extra)
    return out


def not_found(resource: str, name: str) -> Obj:
    """errors.NewNotFound."""
    return failure(404, "NotFound", f"{resource} {go_quote(name)} not found", details(name=name, kind=resource))


def already_exists(resource: str, name: str, *, prefix: str = "") -> Obj:
    """errors.NewAlreadyExists (`prefix` is Store.create's "object is being deleted: ")."""
    message = f"{prefix}{resource} {go_quote(name)} already exists"
    return failure(409, "AlreadyExists", message, details(name=name, kind=resource))


def conflict(resource: str, name: str, detail: str) -> Obj:
    """errors.NewConflict; `resource` is what the caller passed as the GroupResource's Resource."""
    message = f"Operation cannot be fulfilled on {resource} {go_quote(name)}: {detail}"
    return failure(409, "Conflict", message, details(name=name, kind=resource))


def bad_request(message: str) -> Obj:
    """errors.NewBadRequest: no details."""
    return failure(400, "BadRequest", message)


def expired(message: str) -> Obj:
    """errors.NewResourceExpired: 410 Expired, no details."""
    return failure(410, "Expired", message)


def method_not_allowed() -> Obj:
    """NewGenericServerResponse(405, ...): an empty details object."""
    return failure(405, "MethodNotAllowed", METHOD_NOT_ALLOWED, {})


def forbidden(resource: str, name: str, reason: str, causes: list[Obj] | None = None) -> Obj:
    """errors.NewForbidden (+ causes appended by the caller, as NamespaceLifecycle does)."""
    extra: Obj = {"causes": causes} if causes else {}
    return failure(
        403,
        "Forbidden",
        f"{resource} {go_quote(name)} is forbidden: {reason}",
        details(name=name, kind=resource, **extra),
    )


def cause(reason: str, message: str, field: str = "") -> Obj:
    out = {"reason": reason, "message": message}
    if field:
        out["field"] = field
    return out


def field_invalid(field: str, value: str, detail: str) -> Obj:
    """field.Invalid as a StatusCause."""
    return cause("FieldValueInvalid", f"Invalid value: {go_quote(value)}: {detail}", field)


def field_forbidden(field: str, detail: str) -> Obj:
    return cause("FieldValueForbidden", f"Forbidden: {detail}", field)


def field_required(field: str, detail: str) -> Obj:
    return cause("FieldValueRequired", f"Required value: {detail}", field)


def field_not_supported(field: str, rendered_value: str, supported: list[str]) -> Obj:
    """field.NotSupported; `rendered_value` is the value as ErrorBody prints it."""
    quoted = ", ".join(go_quote(s) for s in supported)
    return cause("FieldValueNotSupported", f"Unsupported value: {rendered_value}: supported values: {quoted}", field)


def invalid(kind: str, name: str, causes: list[Obj], *, group: str = "") -> Obj:
    """errors.NewInvalid: one cause is `field: message`, several are `[a, b]`."""
    messages = [f"{c['field']}: {c['message']}" for c in causes]
    joined = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return failure(
        422,
        "Invalid",
        f"{qualified} {go_quote(name)} is invalid: {joined}",
        details(name=name, group=group, kind=kind, causes=causes),
    )


def invalid_options(kind: str, causes: list[Obj]) -> Obj:
    """NewInvalid(GroupKind{meta.k8s.io, <kind>Options}, "", errs), as the handlers answer bad options."""
    return invalid(kind, "", causes, group="meta.k8s.io")


def too_large_resource_version(requested: int, current: int) -> Obj:
    """storage.NewTooLargeResourceVersionError(requested, current, 1) from the watch cache: NewTimeoutError."""
    return failure(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {requested}, current: {current}",
        {"causes": [cause("ResourceVersionTooLarge", "Too large resource version")], "retryAfterSeconds": 1},
    )
