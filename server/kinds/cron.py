"""CronJob schedules as kube-apiserver checks them: robfig/cron v3's ParseStandard, with its exact error texts.

kube-apiserver validates spec.schedule with `cron.ParseStandard` and reports the parser's error as is:

    spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61
    spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]

A standard spec is five fields (minute, hour, day of month, month, day of week) or a descriptor (@hourly,
@daily, @every 1h30m, ...), optionally after TZ= or CRON_TZ=. `parse_standard` answers the error text or None
(validation); `parse` answers the `Schedule` whose `next(t)` is robfig's SpecSchedule.Next (the CronJob
controller's times): the first second after t that every field matches, in the schedule's zone, with robfig's
day rule (when day of month or day of week is `*` both must match, else either). Ported from robfig/cron v3
parser.go and spec.go, quirks included (a negative number's message prints Go's %!s(int=-1); a schedule that
never matches within five years, such as "0 0 31 2 *", has no next time).
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

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


class CronError(ValueError):
    """A spec cron.ParseStandard refuses; the message is its error text."""


@dataclass(frozen=True, slots=True)
class Schedule:
    """robfig's SpecSchedule (bit sets per field, STAR_BIT where the field was `*` or `?`) in a zone, or its
    ConstantDelaySchedule (`every` seconds, for @every)."""

    minute: int = 0
    hour: int = 0
    dom: int = 0
    month: int = 0
    dow: int = 0
    zone: tzinfo = UTC
    every: float = 0.0

    def next(self, after: datetime) -> datetime | None:
        """The first activation strictly after `after` (an aware datetime), in UTC; None when there is none
        within five years (robfig's zero time)."""
        if self.every:
            whole = after.replace(microsecond=0)
            return (whole + timedelta(seconds=self.every)).astimezone(UTC)
        return _spec_next(self, after)


STAR_BIT = 1 << 63


def parse_standard(spec: str) -> str | None:
    """None when cron.ParseStandard accepts `spec`, else its error message."""
    parsed = _parse(spec)
    return parsed if isinstance(parsed, str) else None


def parse(spec: str) -> Schedule:
    """cron.ParseStandard's Schedule; CronError with its message for a spec it refuses."""
    parsed = _parse(spec)
    if isinstance(parsed, str):
        raise CronError(parsed)
    return parsed


def _zone(name: str) -> tzinfo:
    if name in ("", "UTC"):
        return UTC
    if name == "Local":
        return datetime.now().astimezone().tzinfo or UTC
    return zoneinfo.ZoneInfo(name)


def _parse(spec: str) -> Schedule | str:
    if not spec:
        return "empty spec string"
    zone: tzinfo = UTC
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space, equals = spec.find(" "), spec.find("=")
        if space < 0:  # Go would slice past the string and panic; kube-apiserver never sees a result
            return f"provided bad location {spec[equals + 1:]}: unknown time zone {spec[equals + 1:]}"
        location = spec[equals + 1:space]
        problem = location_error(location)
        if problem:
            return f"provided bad location {location}: {problem}"
        zone = _zone(location)
        spec = spec[space:].strip()
    if spec.startswith("@"):
        return _descriptor(spec, zone)
    fields = spec.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    bits: list[int] = []
    for field, bounds in zip(fields, _FIELDS, strict=True):
        field_bits = 0
        for expr in field.split(","):
            got = _range(expr, bounds)
            if isinstance(got, str):
                return got
            field_bits |= got
        bits.append(field_bits)
    return Schedule(bits[0], bits[1], bits[2], bits[3], bits[4], zone)


def location_error(name: str) -> str | None:
    """time.LoadLocation's error for a zone name, or None when it loads ("" and "UTC" are UTC, "Local" local)."""
    if name in ("", "UTC", "Local"):
        return None
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {name}"
    return None


def _all(bounds: _Bounds) -> int:
    return _bits(bounds.low, bounds.high, 1) | STAR_BIT


def _bits(low: int, high: int, step: int) -> int:
    out = 0
    for i in range(low, high + 1, step):
        out |= 1 << i
    return out


def _descriptor(spec: str, zone: tzinfo) -> Schedule | str:
    _minute, hour, dom, month, dow = _FIELDS
    if spec in ("@yearly", "@annually"):
        return Schedule(1, 1, 1 << 1, 1 << 1, _all(dow), zone)
    if spec == "@monthly":
        return Schedule(1, 1, 1 << 1, _all(month), _all(dow), zone)
    if spec == "@weekly":
        return Schedule(1, 1, _all(dom), _all(month), 1, zone)
    if spec in ("@daily", "@midnight"):
        return Schedule(1, 1, _all(dom), _all(month), _all(dow), zone)
    if spec == "@hourly":
        return Schedule(1, _all(hour), _all(dom), _all(month), _all(dow), zone)
    every = "@every "
    if spec.startswith(every):
        try:
            nanoseconds = gotime.parse_duration(spec[len(every):])
        except gotime.TimeError as err:
            return f"failed to parse duration {spec}: {err}"
        # robfig's Every: under a second is a second; fractions of a second are dropped
        seconds = max(1, nanoseconds // 1_000_000_000)
        return Schedule(zone=zone, every=float(seconds))
    return f"unrecognized descriptor: {spec}"


def _range(expr: str, bounds: _Bounds) -> int | str:
    """getRange: `*`, `?`, N, N-M, each optionally /step, names allowed where the field has them."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
        extra = STAR_BIT
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
        if step > 1:
            extra = 0
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
    return _bits(start, end, step) | extra


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


def _day_matches(schedule: Schedule, t: datetime) -> bool:
    dom = (1 << t.day) & schedule.dom > 0
    dow = (1 << ((t.weekday() + 1) % 7)) & schedule.dow > 0
    if schedule.dom & STAR_BIT or schedule.dow & STAR_BIT:
        return dom and dow
    return dom or dow


def _add_month(t: datetime) -> datetime:
    return t.replace(year=t.year + 1, month=1) if t.month == 12 else t.replace(month=t.month + 1)


def _spec_next(schedule: Schedule, after: datetime) -> datetime | None:
    """SpecSchedule.Next on wall-clock time in the schedule's zone (its loops, wraps and five-year limit)."""
    t = after.astimezone(schedule.zone).replace(tzinfo=None, microsecond=0) + timedelta(seconds=1)
    added = False
    year_limit = t.year + 5
    while True:  # robfig's WRAP
        if t.year > year_limit:
            return None
        wrapped = False
        while not (1 << t.month) & schedule.month:
            if not added:
                added = True
                t = t.replace(day=1, hour=0, minute=0, second=0)
            t = _add_month(t)
            if t.month == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not _day_matches(schedule, t):
            if not added:
                added = True
                t = t.replace(hour=0, minute=0, second=0)
            t += timedelta(days=1)
            if t.day == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << t.hour) & schedule.hour:
            if not added:
                added = True
                t = t.replace(minute=0, second=0)
            t += timedelta(hours=1)
            if t.hour == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << t.minute) & schedule.minute:
            if not added:
                added = True
                t = t.replace(second=0)
            t += timedelta(minutes=1)
            if t.minute == 0:
                wrapped = True
                break
        if wrapped:
            continue
        if t.second != 0:  # standard specs fire at second 0: on to the next minute, checked again
            added = True
            t = t.replace(second=0) + timedelta(minutes=1)
            continue
        return t.replace(tzinfo=schedule.zone).astimezone(UTC)
