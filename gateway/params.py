"""Query parameters -> the core's option messages, with kube-apiserver's 400s for malformed values.

Values are read as apimachinery's query-parameter conversions read them (runtime/conversion.go):
- a bool is false only when absent, "0" or "false" in any case; anything else, even an empty
  value (``?watch``), is true, so a bool never fails to parse;
- an int64 is strconv.ParseInt of the first value, and fails even when empty
  (``limit=abc`` -> 400 ``strconv.ParseInt: parsing "abc": invalid syntax``);
- ``timeout`` is a Go duration (``30s``, ``1m30s``), checked by kube-apiserver's WithRequestDeadline
  for every request that is not a watch.

Unknown parameters are ignored, as kube-apiserver ignores them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from capstan.api.meta.v1 import meta_pb2
from gateway.client import CoreError, failure
from server.machinery.fields.managers import manager_from_user_agent

Query = Mapping[str, Sequence[str]]  # every value of every parameter, in order

# --request-timeout's default: no request that is not a watch runs longer, whatever ?timeout says.
REQUEST_TIMEOUT_MAX = 60.0

_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _one(query: Query, name: str) -> str:
    values = query.get(name)
    return values[0] if values else ""


def _int(query: Query, name: str) -> int | None:
    """Convert_Slice_string_To_int64: None when absent; ParseInt's 400 when malformed (even empty)."""
    values = query.get(name)
    if not values:
        return None
    text = values[0]
    if not _INT64.fullmatch(text):
        raise bad_request(f"strconv.ParseInt: parsing {_go_quote(text)}: invalid syntax")
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise bad_request(f"strconv.ParseInt: parsing {_go_quote(text)}: value out of range")
    return value


def _bool(query: Query, name: str) -> bool | None:
    """Convert_Slice_string_To_bool: None when absent; false for "0" and "false" in any case; else true."""
    values = query.get(name)
    if not values:
        return None
    return not (values[0] == "0" or values[0].lower() == "false")


def bad_request(message: str) -> CoreError:
    return CoreError(failure(400, "BadRequest", message))


def list_options(query: Query) -> meta_pb2.ListOptions:
    options = meta_pb2.ListOptions(
        labelSelector=_one(query, "labelSelector"),
        fieldSelector=_one(query, "fieldSelector"),
        resourceVersion=_one(query, "resourceVersion"),
        resourceVersionMatch=_one(query, "resourceVersionMatch"),
    )
    setattr(options, "continue", _one(query, "continue"))
    for name in ("limit", "timeoutSeconds"):
        value = _int(query, name)
        if value is not None:
            setattr(options, name, value)
    for name in ("watch", "allowWatchBookmarks"):
        if _bool(query, name):
            setattr(options, name, True)
    initial = _bool(query, "sendInitialEvents")  # a *bool: present-and-false differs from absent
    if initial is not None:
        options.sendInitialEvents = initial
    return options


def fill_get_options(options: meta_pb2.GetOptions, query: Query) -> None:
    """Set a GetRequest's own options from the query."""
    resource_version = _one(query, "resourceVersion")
    if resource_version:
        options.resourceVersion = resource_version


def field_manager(query: Query, user_agent: str) -> str:
    """?fieldManager, else the manager kube-apiserver derives from the User-Agent."""
    named = _one(query, "fieldManager")
    if named or "fieldManager" in query:
        return named
    return manager_from_user_agent(user_agent)


def fill_write_options(options: meta_pb2.CreateOptions | meta_pb2.UpdateOptions, query: Query,
                       user_agent: str) -> None:
    """Set a CreateRequest's or UpdateRequest's own options (the two messages have the same fields) from the
    query."""
    dry_run = query.get("dryRun")
    if dry_run:
        options.dryRun.extend(dry_run)
    manager = field_manager(query, user_agent)
    if manager:
        options.fieldManager = manager
    validation = _one(query, "fieldValidation")
    if validation:
        options.fieldValidation = validation


def patch_options(query: Query, user_agent: str, *, apply: bool) -> meta_pb2.PatchOptions:
    """An apply must name its manager (the core answers 422 if it does not); other patches default it."""
    options = meta_pb2.PatchOptions(
        dryRun=list(query.get("dryRun", ())),
        fieldManager=_one(query, "fieldManager") if apply else field_manager(query, user_agent),
        fieldValidation=_one(query, "fieldValidation"),
    )
    force = _bool(query, "force")
    if force is not None:
        options.force = force
    return options


def delete_options(query: Query, body: meta_pb2.DeleteOptions | None) -> meta_pb2.DeleteOptions:
    """The body's DeleteOptions when the request has a body; otherwise the query's.

    Never a mix: kube-apiserver's delete and deletecollection handlers decode the body when it is
    not empty and read the query only when it is (k8s.io/apiserver handlers/delete.go).
    """
    if body is not None:
        return body
    options = meta_pb2.DeleteOptions(dryRun=list(query.get("dryRun", ())))
    grace = _int(query, "gracePeriodSeconds")
    if grace is not None:
        options.gracePeriodSeconds = grace
    policy = query.get("propagationPolicy")
    if policy:
        options.propagationPolicy = policy[0]
    orphan = _bool(query, "orphanDependents")
    if orphan is not None:
        options.orphanDependents = orphan
    return options


def pretty(query: Query) -> bool:
    return bool(_bool(query, "pretty"))


def deadline(query: Query) -> float:
    """Seconds a request that is not a watch may take: ?timeout when it is positive and below the
    maximum, else the maximum (WithRequestDeadline). A malformed timeout is kube-apiserver's 400."""
    text = _one(query, "timeout")
    if not text:
        return REQUEST_TIMEOUT_MAX
    try:
        seconds = go_duration(text)
    except ValueError as err:
        raise bad_request(f"invalid timeout specified in the request URL - {err}") from None
    return seconds if 0 < seconds < REQUEST_TIMEOUT_MAX else REQUEST_TIMEOUT_MAX


_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_NUMBER = re.compile(r"([0-9]*)(?:\.([0-9]*))?")
_UNIT = re.compile(r"[^0-9.]*")
_MAX_DURATION = ((1 << 63) - 1) / 1e9  # time.Duration is int64 nanoseconds


def go_duration(text: str) -> float:
    """Go's time.ParseDuration, in seconds: ``300ms``, ``-1.5h``, ``2h45m``; a bare ``0`` needs no unit.
    Raises ValueError with Go's message, e.g. ``time: invalid duration "abc"``."""
    quoted = _go_quote(text)
    rest, sign = text, 1.0
    if rest[:1] in ("-", "+"):
        sign, rest = (-1.0 if rest[0] == "-" else 1.0), rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise ValueError(f"time: invalid duration {quoted}")
    total = 0.0
    while rest:
        number = _NUMBER.match(rest)
        assert number is not None  # the pattern matches the empty string
        whole, fraction = number.group(1), number.group(2) or ""
        if not whole and not fraction:
            raise ValueError(f"time: invalid duration {quoted}")
        rest = rest[number.end():]
        unit_match = _UNIT.match(rest)
        unit = unit_match.group() if unit_match else ""
        rest = rest[len(unit):]
        if not unit:
            raise ValueError(f"time: missing unit in duration {quoted}")
        if unit not in _UNITS:
            raise ValueError(f"time: unknown unit {_go_quote(unit)} in duration {quoted}")
        total += float(f"{whole or '0'}.{fraction or '0'}") * _UNITS[unit]
        if total > _MAX_DURATION:
            raise ValueError(f"time: invalid duration {quoted}")
    return sign * total


def _go_quote(text: str) -> str:
    """Go's %q / strconv.Quote for the text a client can put in a query string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in escaped)
    return f'"{escaped}"'
