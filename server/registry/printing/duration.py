"""Ages as kube-apiserver words them: duration.HumanDuration and the printers' translateTimestampSince.

An Age cell depends on when the table is built, so a cell function never reads the
clock: it returns `Since(timestamp)`, and the table resolves every Since against one
request time (`since`). Cells stay pure functions of the object, and one clock
reading serves a whole list, as one `time.Now()` nearly does in Go.

HumanDuration keeps about two significant figures; worked examples at each boundary
(apimachinery's duration_test.go): 119.999s -> "119s", 2m -> "2m", 9m59s -> "9m59s",
10m1s -> "10m", 179m59s -> "179m", 3h -> "3h", 7h59m -> "7h59m", 8h59m -> "8h",
47h59m -> "47h", 2d -> "2d", 7d23h -> "7d23h", 8d23h -> "8d", 729d -> "729d",
2y23h -> "2y", 2y1d -> "2y1d", 7y364d -> "7y364d", 8y364d -> "8y". A year is 365 days.
"""

from __future__ import annotations

from dataclasses import dataclass

from server.machinery.codec import gotime

SECOND = 1_000_000_000  # nanoseconds, as Go's time.Duration counts
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
# Go's zero time.Time, 0001-01-01T00:00:00Z, in Unix seconds: metav1.Time.IsZero() holds for it.
ZERO_TIME_SECONDS = -62_135_596_800

UNKNOWN = "<unknown>"
INVALID = "<invalid>"


def human_duration(nanos: int) -> str:
    """duration.HumanDuration: "<invalid>" below -1s (clock skew up to 2s reads as "0s"), else e.g. "3m2s"."""
    seconds = -(-nanos // SECOND) if nanos < 0 else nanos // SECOND  # int(d.Seconds()) truncates toward 0
    if seconds < -1:
        return INVALID
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = nanos // MINUTE
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = nanos // HOUR
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        h = hours % 24
        return f"{days}d" if h == 0 else f"{days}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years, day_of_year = divmod(days, 365)
    if hours < 24 * 365 * 8 and day_of_year:
        return f"{years}y{day_of_year}d"
    return f"{years}y"


@dataclass(frozen=True, slots=True)
class Since:
    """A cell holding the time elapsed since `timestamp` (an RFC 3339 string, or None when unset)."""

    timestamp: object


def since(timestamp: object, now_ns: int) -> str:
    """translateTimestampSince: "<unknown>" for an unset or zero time, else HumanDuration(now - timestamp).

    A value that is not an RFC 3339 time answers "<invalid>", as a custom resource's date
    column does (stored built-in objects always hold valid times).
    """
    if timestamp is None or timestamp == "":
        return UNKNOWN
    if not isinstance(timestamp, str):
        return INVALID
    try:
        seconds, nanos = gotime.parse(timestamp, gotime.RFC3339)
    except gotime.TimeError:
        return INVALID
    if seconds == ZERO_TIME_SECONDS and nanos == 0:
        return UNKNOWN
    return human_duration(now_ns - (seconds * SECOND + nanos))
