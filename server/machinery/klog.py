"""klog's verbosity and structured messages over Python logging, for every layer that logs at a verbosity.

klog's V(n) is the Python logging level INFO - n (V(0) is INFO; V(9) sits just above DEBUG, which -v=10 shows),
so `logging.getLogger(...).isEnabledFor(level(n))` is klog's `V(n).Enabled()`. `info_s` is klog's InfoS: a
constant message and key/value pairs, kept on the record for the handler to write (capstan/cli/logs.py writes
them as klog's text or kube's JSON). Pure: imports only the standard library.
"""

from __future__ import annotations

import logging

KV_ATTR = "capstan_kv"  # a LogRecord's key/value pairs
STRUCTURED_ATTR = "capstan_structured"  # the record is an InfoS: its message is quoted in text


def level(verbosity: int) -> int:
    """The Python logging level of klog's V(verbosity)."""
    if verbosity < 10:
        return logging.INFO - max(0, verbosity)
    return logging.DEBUG - (verbosity - 10)


def verbosity_of(levelno: int) -> int:
    """klog's V of a record's level at or below INFO (0 for INFO and above)."""
    return max(0, logging.INFO - levelno)


def info_s(logger: logging.Logger, verbosity: int, msg: str, /, **kv: object) -> None:
    """klog's InfoS at V(verbosity)."""
    if logger.isEnabledFor(level(verbosity)):
        logger.log(level(verbosity), msg, extra={KV_ATTR: kv, STRUCTURED_ATTR: True}, stacklevel=2)


def duration(seconds: float) -> str:
    """Go's time.Duration text, as kube's logs write latencies: 1.5s, 12.345ms, 250µs, 800ns."""
    if seconds >= 1:
        return f"{seconds:.9g}s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.6g}ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3g}µs"
    return f"{round(seconds * 1e9)}ns"
