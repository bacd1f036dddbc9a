"""CronJob schedules as kube-apiserver checks them: robfig/cron v3's ParseStandard, with its exact error texts.

kube-apiserver validates spec.schedule with `cron.ParseStandard` and reports the parser's error as is:

    spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61
    spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]

A standard spec is five fields (minute, hour, day of month, month, day of week) or a descriptor (@hourly,
@daily, @every 1h30m, ...), optionally after TZ= or CRON_TZ=. Only whether a spec parses matters here (Capstan
runs no CronJob controller), so this returns the error text or None rather than a schedule. Ported from
robfig/cron v3 parser.go, quirks included (a negative number's message prints Go's %!s(int=-1)).
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass

from server.machinery.codec import gotime
from server.machinery.validation.names import go_quote


@dataclass(frozen=True, slots=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int]


_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                       "dec"), start=1)}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
# minute, hour, day of month, month, day of week
_FIELDS = (_Bounds(0, 59, {}), _Bounds(0, 23, {}), _Bounds(1, 31, {}), _Bounds(1, 12, _MONTHS), _Bounds(0, 6, _DAYS))
_DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
_ATOI = re.compile(r"[+-]?[0-9]+")
INT64_MAX = 2**63 - 1


def parse_standard(spec: str) -> str | None:
    """None when cron.ParseStandard accepts `spec`, else its error message."""
    if not spec:
        return "empty spec string"
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space, equals = spec.find(" "), spec.find("=")
        if space < 0:  # Go would slice past the string and panic; kube-apiserver never sees a result
            return f"provided bad location {spec[equals + 1:]}: unknown time zone {spec[equals + 1:]}"
        location = spec[equals + 1:space]
        problem = location_error(location)
        if problem:
            return f"provided bad location {location}: {problem}"
        spec = spec[space:].strip()
    if spec.startswith("@"):
        return _descriptor(spec)
    fields = spec.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    for field, bounds in zip(fields, _FIELDS, strict=True):
        for expr in (part for part in field.split(",") if part):
            problem = _range(expr, bounds)
            if problem:
                return problem
    return None


def location_error(name: str) -> str | None:
    """time.LoadLocation's error for a zone name, or None when it loads ("" and "UTC" are UTC, "Local" local)."""
    if name in ("", "UTC", "Local"):
        return None
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {name}"
    return None


def _descriptor(spec: str) -> str | None:
    if spec in _DESCRIPTORS:
        return None
    every = "@every "
    if spec.startswith(every):
        try:
            gotime.parse_duration(spec[len(every):])
        except gotime.TimeError as err:
            return f"failed to parse duration {spec}: {err}"
        return None
    return f"unrecognized descriptor: {spec}"


def _range(expr: str, bounds: _Bounds) -> str | None:
    """getRange: `*`, `?`, N, N-M, each optionally /step, names allowed where the field has them."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    if low_and_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
    else:
        start_or_error = _int_or_name(low_and_high[0], bounds.names)
        if isinstance(start_or_error, str):
            return start_or_error
        start = end = start_or_error
        if len(low_and_high) == 2:
            end_or_error = _int_or_name(low_and_high[1], bounds.names)
            if isinstance(end_or_error, str):
                return end_or_error
            end = end_or_error
        elif len(low_and_high) > 2:
            return f"too many hyphens: {expr}"
    step = 1
    if len(range_and_step) == 2:
        step_or_error = _int(range_and_step[1])
        if isinstance(step_or_error, str):
            return step_or_error
        step = step_or_error
        if single:  # "N/step" means "N-max/step"
            end = bounds.high
    elif len(range_and_step) > 2:
        return f"too many slashes: {expr}"
    if start < bounds.low:
        return f"beginning of range ({start}) below minimum ({bounds.low}): {expr}"
    if end > bounds.high:
        return f"end of range ({end}) above maximum ({bounds.high}): {expr}"
    if start > end:
        return f"beginning of range ({start}) beyond end of range ({end}): {expr}"
    if step == 0:
        return f"step of range should be a positive number: {expr}"
    return None


def _int_or_name(expr: str, names: dict[str, int]) -> int | str:
    named = names.get(expr.lower())
    return named if named is not None else _int(expr)


def _int(expr: str) -> int | str:
    """mustParseInt: strconv.Atoi's number, or the error (a negative one is refused with Go's %s of an int)."""
    if not _ATOI.fullmatch(expr):
        return f"failed to parse int from {expr}: strconv.Atoi: parsing {go_quote(expr)}: invalid syntax"
    number = int(expr)
    if not -INT64_MAX - 1 <= number <= INT64_MAX:
        return f"failed to parse int from {expr}: strconv.Atoi: parsing {go_quote(expr)}: value out of range"
    if number < 0:
        return f"negative number ({number}) not allowed: %!s(int={number})"
    return number
