"""Checks of request options (dryRun, fieldValidation, list and watch parameters), as kube-apiserver makes them.

Invalid options answer 422 Invalid naming the options kind, e.g.
`CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ...`.
"""

from __future__ import annotations

from collections.abc import Sequence

from capstan.api.meta.v1 import meta_pb2
from server.machinery import errors
from server.machinery.fields.managers import FIELD_MANAGER_MAX_LENGTH
from server.machinery.validation.names import FieldError, join_errors

DRY_RUN_VALUES = ("All",)
FIELD_VALIDATION_VALUES = ("", "Ignore", "Strict", "Warn")
PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")


def invalid_options(kind: str, errs: Sequence[FieldError]) -> errors.ApiError:
    causes = [errors.Cause(c["reason"], c.get("message", ""), c.get("field", "")) for c in (e.cause() for e in errs)]
    return errors.invalid(kind, "meta.k8s.io", "", join_errors(errs), causes)


def dry_run(values: Sequence[str], kind: str) -> bool:
    """True for dryRun=All; any other value is Invalid."""
    if any(v not in DRY_RUN_VALUES for v in values):
        raise invalid_options(kind, [FieldError.not_supported("dryRun", list(values), DRY_RUN_VALUES)])
    return bool(values)


def field_validation(value: str, kind: str) -> str:
    """The fieldValidation mode; unset means Warn."""
    if value not in FIELD_VALIDATION_VALUES:
        raise invalid_options(kind, [FieldError.not_supported("fieldValidation", value, FIELD_VALIDATION_VALUES)])
    return value or "Warn"


def delete_options(options: meta_pb2.DeleteOptions) -> tuple[bool, str]:
    """(dry run, propagation policy) of valid DeleteOptions."""
    errs: list[FieldError] = []
    if any(v not in DRY_RUN_VALUES for v in options.dryRun):
        errs.append(FieldError.not_supported("dryRun", list(options.dryRun), DRY_RUN_VALUES))
    policy = options.propagationPolicy
    if policy and policy not in PROPAGATION_POLICIES:
        errs.append(FieldError.not_supported("propagationPolicy", policy, (*PROPAGATION_POLICIES, "nil")))
    if options.HasField("orphanDependents") and policy:
        errs.append(FieldError.invalid(
            "propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both set"))
    if errs:
        raise invalid_options("DeleteOptions", errs)
    return bool(options.dryRun), policy


def list_options(options: meta_pb2.ListOptions, *, watch: bool, watch_list: bool = False) -> None:
    """apimachinery's ValidateListOptions; `watch_list`: kube's WatchList feature gate, without which a watch may
    not ask for its initial events. With it on, the rules are 1.32's, where the feature is beta: a watch with
    sendInitialEvents needs no allowWatchBookmarks."""
    errs = _watch_option_errors(options, watch_list) if watch else _list_option_errors(options)
    if errs:
        raise invalid_options("ListOptions", errs)


def _list_option_errors(options: meta_pb2.ListOptions) -> list[FieldError]:
    errs: list[FieldError] = []
    match = options.resourceVersionMatch
    if match:
        if not options.resourceVersion:
            errs.append(FieldError.forbidden(
                "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"))
        if getattr(options, "continue"):
            errs.append(FieldError.forbidden(
                "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
        if match not in ("Exact", "NotOlderThan"):
            errs.append(FieldError.not_supported("resourceVersionMatch", match, ("Exact", "NotOlderThan", "")))
        if match == "Exact" and options.resourceVersion == "0":
            errs.append(FieldError.forbidden(
                "resourceVersionMatch", 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if options.HasField("sendInitialEvents"):
        errs.append(FieldError.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return errs


def _watch_option_errors(options: meta_pb2.ListOptions, watch_list: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    match = options.resourceVersionMatch
    if options.HasField("sendInitialEvents"):
        if match != "NotOlderThan":
            errs.append(FieldError.forbidden(
                "resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
        if not watch_list:
            errs.append(FieldError.forbidden(
                "sendInitialEvents", "sendInitialEvents is forbidden for watch unless the WatchList feature gate is "
                "enabled"))
    if match:
        if not options.HasField("sendInitialEvents"):
            errs.append(FieldError.forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ))
        if match != "NotOlderThan":
            errs.append(FieldError.not_supported("resourceVersionMatch", match, ("NotOlderThan",)))
        if getattr(options, "continue"):
            errs.append(FieldError.forbidden(
                "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
    return errs


def resource_version(value: str) -> int:
    """A resourceVersion a client sent, as a revision; 400 when it is not an unsigned integer."""
    if not value.isdigit():
        raise errors.bad_request(
            f'resourceVersion: Invalid value: "{value}": strconv.ParseUint: parsing "{value}": invalid syntax'
        )
    return int(value)


def field_manager(value: str, kind: str, *, apply: bool = False, force: bool | None = None) -> str:
    """ValidateFieldManager (and, for patches, ValidatePatchOptions): a printable name of at most
    128 characters, required for apply; `force` only with apply."""
    errs: list[FieldError] = []
    if force is not None and not apply:
        errs.append(FieldError.forbidden("force", "may not be specified for non-apply patch"))
    if apply and not value:
        errs.append(FieldError.required("fieldManager", "is required for apply patch"))
    if len(value) > FIELD_MANAGER_MAX_LENGTH:
        errs.append(FieldError.too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH))
    errs.extend(FieldError.invalid("fieldManager", value, f"invalid character U+{ord(c):04X} at position {i}")
                for i, c in enumerate(value) if not c.isprintable())
    if errs:
        raise invalid_options(kind, errs)
    return value
