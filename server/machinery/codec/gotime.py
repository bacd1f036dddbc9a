"""Go's time formats as Kubernetes' JSON uses them: RFC 3339 instants and duration strings.

kube-apiserver parses meta/v1 Time with Go's `time.Parse(time.RFC3339, s)`, MicroTime with the
layout "2006-01-02T15:04:05.000000Z07:00", and Duration with `time.ParseDuration`; clients see
Go's error text verbatim inside a 400 Status. This module reproduces what those functions accept
and the words they fail with, so Capstan answers the same bad input the same way. Instants are
plain integers here (seconds since the Unix epoch, UTC, plus nanoseconds), so years 0000-9999
all work, unlike `datetime`.
"""

from __future__ import annotations

import re
import time
from functools import lru_cache

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"

# The layouts as Go's parser walks them: (literal prefix, element) pairs.
_STEPS = {
    RFC3339: (("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05"), ("", "Z07:00")),
    RFC3339_MICRO: (
        ("", "2006"), ("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05"),
        ("", ".000000"), ("", "Z07:00"),
    ),
}  # fmt: skip

_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class TimeError(ValueError):
    """A value Go's time package rejects; str() is Go's error text."""


def go_quote(s: str) -> str:
    """Go's time.quote: double quotes, with \\ and " escaped and other bytes outside printable ASCII as \\xNN."""
    out = ['"']
    for ch in s:
        if ch < " " or ch > "~":
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
        else:
            out.append("\\" + ch if ch in '"\\' else ch)
    out.append('"')
    return "".join(out)


def _bad(layout: str, value: str, elem: str, rest: str) -> TimeError:
    return TimeError(
        f"parsing time {go_quote(value)} as {go_quote(layout)}: cannot parse {go_quote(rest)} as {go_quote(elem)}"
    )


def _out_of_range(value: str, what: str) -> TimeError:
    return TimeError(f"parsing time {go_quote(value)}: {what} out of range")


def _digits(s: str, n: int) -> int | None:
    """The number in the first n characters of s when they are all ASCII digits (Go's getnum, fixed)."""
    head = s[:n]
    return int(head) if len(head) == n and head.isascii() and head.isdigit() else None


def _is_digit(s: str, i: int) -> bool:
    """Go's isDigit: s[i] exists and is an ASCII digit."""
    return i < len(s) and "0" <= s[i] <= "9"


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, including 0 and negatives)."""
    y = year - 1 if month <= 2 else year
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


# The form servers and clients write: whole seconds in UTC. Matched first; anything else takes Go's walk.
_COMMON = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z", re.ASCII)


@lru_cache(maxsize=4096)
def parse(value: str, layout: str) -> tuple[int, int]:
    """(seconds since the epoch, nanoseconds) of value read with a Go RFC 3339 layout.

    Contract: accepts exactly what Go's time.Parse accepts for these two layouts (e.g. a one-digit
    hour, or a fraction after the seconds under RFC3339) and raises TimeError with Go's message,
    e.g. parsing time "2024-13-01T00:00:00Z": month out of range. Cached: the same instants recur.
    """
    common = _COMMON.fullmatch(value) if layout == RFC3339 else None
    if common is not None:
        year, month, day, hour, minute, sec = map(int, common.groups())
        if 1 <= month <= 12 and 1 <= day <= 28 and hour < 24 and minute < 60 and sec < 60:
            return _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + sec, 0
    return _walk(value, layout)


def _walk(value: str, layout: str) -> tuple[int, int]:
    """Go's time.Parse, element by element, for every input (the slow path and every error)."""
    rest = value
    year = month = day = hour = minute = sec = nanos = offset = 0
    for prefix, elem in _STEPS[layout]:
        if not rest.startswith(prefix):
            raise _bad(layout, value, prefix, rest)
        rest = rest[len(prefix) :]
        hold = rest
        if elem == "2006":
            if not _is_digit(rest, 0) or (year_ := _digits(rest, 4)) is None:
                raise _bad(layout, value, elem, hold)
            year, rest = year_, rest[4:]
        elif elem == "15":  # Go reads the hour with a non-fixed width: one or two digits
            if not _is_digit(rest, 0):
                raise _bad(layout, value, elem, hold)
            width = 2 if _is_digit(rest, 1) else 1
            hour, rest = int(rest[:width]), rest[width:]
            if hour >= 24:
                raise _out_of_range(value, "hour")
        elif elem in ("01", "02", "04", "05"):
            number = _digits(rest, 2)
            if number is None:
                raise _bad(layout, value, elem, hold)
            rest = rest[2:]
            if elem == "01":
                month = number
                if not 1 <= month <= 12:
                    raise _out_of_range(value, "month")
            elif elem == "02":
                day = number
            elif elem == "04":
                minute = number
                if minute >= 60:
                    raise _out_of_range(value, "minute")
            else:
                sec = number
                if sec >= 60:
                    raise _out_of_range(value, "second")
                if layout == RFC3339 and rest[:1] in (".", ",") and _is_digit(rest, 1):
                    n = 2
                    while _is_digit(rest, n):
                        n += 1
                    nanos, rest = int(rest[1 : min(n, 10)].ljust(9, "0")), rest[n:]
        elif elem == ".000000":
            frac = _digits(rest[1:], 6)
            if rest[:1] not in (".", ",") or frac is None:
                raise _bad(layout, value, elem, hold)
            nanos, rest = frac * 1000, rest[7:]
        else:  # "Z07:00"
            if rest[:1] == "Z":
                rest = rest[1:]
                continue
            if len(rest) < 6 or rest[3] != ":" or rest[0] not in "+-":
                raise _bad(layout, value, elem, hold)
            hh, mm = _digits(rest[1:3], 2), _digits(rest[4:6], 2)
            if hh is None or mm is None:
                raise _bad(layout, value, elem, hold)
            if hh > 24:
                raise _out_of_range(value, "time zone offset hour")
            if mm > 60:
                raise _out_of_range(value, "time zone offset minute")
            offset = (hh * 60 + mm) * 60 * (1 if rest[0] == "+" else -1)
            rest = rest[6:]
    if rest:
        raise TimeError(f"parsing time {go_quote(value)}: extra text: {go_quote(rest)}")
    days_in_month = 29 if month == 2 and _is_leap(year) else _DAYS_IN_MONTH[month - 1]
    if not 1 <= day <= days_in_month:
        raise _out_of_range(value, "day")
    seconds = _days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + sec - offset
    return seconds, nanos


# 1000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the range strftime's %Y pads to four digits.
_STRFTIME_RANGE = range(-30610224000, 253402300800)


@lru_cache(maxsize=4096)
def format_seconds(seconds: int) -> str:
    """Go's t.UTC().Format(time.RFC3339) for a whole second, e.g. 1714557600 -> "2024-05-01T10:00:00Z".

    Cached: the same instants (creationTimestamp, managedFields[].time) recur on every encode.
    """
    if seconds in _STRFTIME_RANGE:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
    days, rest = divmod(seconds, 86400)
    z = days + 719468
    era, doe = divmod(z, 146097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    day = doy - (153 * mp + 2) // 5 + 1
    return f"{year:04d}-{month:02d}-{day:02d}T{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}Z"


def format_micro(seconds: int, nanos: int) -> str:
    """Go's Format(RFC3339Micro): six fraction digits, truncated, e.g. "2024-05-01T10:00:00.123456Z"."""
    seconds += nanos // 1_000_000_000
    return f"{format_seconds(seconds)[:-1]}.{nanos % 1_000_000_000 // 1000:06d}Z"


_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_MAX_DURATION = (1 << 63) - 1


def _fraction(value: int, digits: int) -> str:
    """value's last `digits` decimal digits as Go's fmtFrac prints them: "" or "." plus digits, trailing 0s cut."""
    frac = str(value % 10**digits).rjust(digits, "0").rstrip("0") if digits else ""
    return f"{value // 10**digits}" + (f".{frac}" if frac else "")


def format_duration(nanos: int) -> str:
    """Go's time.Duration.String(), e.g. 3_600 * 10**9 -> "1h0m0s", 1_500_000 -> "1.5ms", 0 -> "0s"."""
    if nanos == 0:
        return "0s"
    sign, u = ("-", -nanos) if nanos < 0 else ("", nanos)
    if u < 1_000:
        return f"{sign}{u}ns"
    if u < 1_000_000:
        return f"{sign}{_fraction(u, 3)}µs"
    if u < 10**9:
        return f"{sign}{_fraction(u, 6)}ms"
    secs = u // 10**9
    text = f"{_fraction(secs % 60 * 10**9 + u % 10**9, 9)}s"
    minutes = secs // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes // 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


def parse_duration(text: str) -> int:
    """Go's time.ParseDuration: nanoseconds of e.g. "1h30m", "-1.5s", "300ms"; raises TimeError in Go's words."""
    s = text
    negative = s[:1] == "-"
    if s[:1] in ("-", "+"):
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise TimeError(f"time: invalid duration {go_quote(text)}")
    total = 0
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise TimeError(f"time: invalid duration {go_quote(text)}")
        i = 0
        while i < len(s) and "0" <= s[i] <= "9":
            i += 1
        whole, s = s[:i], s[i:]
        frac = ""
        if s[:1] == ".":
            i = 1
            while i < len(s) and "0" <= s[i] <= "9":
                i += 1
            frac, s = s[1:i], s[i:]
        if not whole and not frac:
            raise TimeError(f"time: invalid duration {go_quote(text)}")
        i = 0
        while i < len(s) and s[i] != "." and not "0" <= s[i] <= "9":
            i += 1
        if i == 0:
            raise TimeError(f"time: missing unit in duration {go_quote(text)}")
        unit_name, s = s[:i], s[i:]
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise TimeError(f"time: unknown unit {go_quote(unit_name)} in duration {go_quote(text)}")
        total += int(whole or "0") * unit + (int(frac) * unit // 10 ** len(frac) if frac else 0)
        if total > _MAX_DURATION + negative:
            raise TimeError(f"time: invalid duration {go_quote(text)}")
    return -total if negative else total
