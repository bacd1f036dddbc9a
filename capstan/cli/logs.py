"""Logs as kube's components write them, so operators read and ship Capstan's logs with the tools they use.

Verbosity is klog's: `-v N` / `--v=N` turns on the messages logged at V(N) and below. A klog level maps onto a
Python logging level below INFO (`level(n)` = INFO - n, so V(0) is INFO, V(9) sits just above DEBUG and
Python's DEBUG messages appear from -v=10; server/machinery/klog.py, which every layer may import). Code logs
at a verbosity with `logger.log(level(3), ...)`, or structured, as klog's InfoS, with
`info_s(logger, 3, "HTTP", verb="GET", ...)`.

`--logging-format` is kube's component-base flag:
  text  klog's header and message: `I1129 08:00:00.000000   12345 file.py:123] msg`; a structured message is
        quoted and followed by its key="value" pairs, as klog's InfoS writes it.
  json  kube's JSON logger (zap, as component-base configures it): one object per line,
        {"ts": <seconds since the epoch>, "caller": "file.py:123", "msg": ..., "v": N, <key>: <value>...};
        an error has no "v"; its exception, if any, is "err".

`configure` installs the handler on the root logger; `log_flags` logs every flag's value at V(1) as kube's
`cliflag.PrintFlags` does (`FLAG: --name="value"`). Any entry
point (`capstan serve|core|gateway`, a kube-apiserver command line) can take its flags from here; it imports
the standard library and server/machinery/klog.py only.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Iterable, Mapping
from typing import IO, Any

from server.machinery.klog import KV_ATTR, STRUCTURED_ATTR, info_s, level, verbosity_of

__all__ = ["FORMATS", "add_flags", "configure", "info_s", "level", "log_flags", "namespace_flags"]

FORMATS = ("text", "json")


def add_flags(parser: argparse.ArgumentParser) -> None:
    """`-v`/`--v` and `--logging-format`, with kube's names and defaults."""
    parser.add_argument("-v", "--v", type=_verbosity, default=0, dest="v", metavar="N",
                        help="log level verbosity, as klog's -v (default 0; 1: flags and start-up; 3: every "
                             "request, as kube's httplog)")
    parser.add_argument("--logging-format", choices=FORMATS, default="text",
                        help="log format: text (klog's header) or json (kube's structured JSON) (default text)")


def _verbosity(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid verbosity {text!r}: an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"invalid verbosity {text!r}: not negative")
    return value


def configure(verbosity: int = 0, logging_format: str = "text", stream: IO[str] | None = None) -> logging.Handler:
    """Route every logger through one handler in the given format at the given verbosity; returns the handler."""
    if logging_format not in FORMATS:
        raise ValueError(f'unsupported log format "{logging_format}"')
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if logging_format == "json" else KlogFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level(verbosity))
    return handler


def log_flags(logger: logging.Logger, flags: Mapping[str, object] | Iterable[tuple[str, object]]) -> None:
    """Each flag's value at V(1), sorted by name, as kube-apiserver logs its command line at start."""
    if not logger.isEnabledFor(level(1)):
        return
    items = flags.items() if isinstance(flags, Mapping) else flags
    for name, value in sorted(items, key=lambda item: item[0]):
        logger.log(level(1), "FLAG: --%s=%s", name.replace("_", "-"), _quote(_flag_text(value)))


def namespace_flags(args: argparse.Namespace, skip: Iterable[str] = ("command",)) -> dict[str, object]:
    """An argparse result as flag names and values (for log_flags)."""
    return {name: value for name, value in vars(args).items() if name not in set(skip)}


def _flag_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(_flag_text(item) for item in value)
    return str(value)


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _value(value: object) -> str:
    """A key's value as klog's text writes it: strings and errors quoted, numbers and booleans bare."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(item) for item in value) + "]"
    return _quote(str(value))


_SEVERITY = {logging.CRITICAL: "F", logging.ERROR: "E", logging.WARNING: "W"}


def _severity(levelno: int) -> str:
    for threshold, letter in _SEVERITY.items():
        if levelno >= threshold:
            return letter
    return "I"


class KlogFormatter(logging.Formatter):
    """klog's text format: `Lmmdd hh:mm:ss.uuuuuu pid file:line] msg`."""

    def format(self, record: logging.LogRecord) -> str:
        seconds = int(record.created)
        micros = int((record.created - seconds) * 1_000_000)
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime(seconds))
        where = f"{record.filename}:{record.lineno}"
        header = f"{_severity(record.levelno)}{stamp}.{micros:06d} {record.process or 0:7d} {where}] "
        kv: Mapping[str, object] | None = getattr(record, KV_ATTR, None)
        if getattr(record, STRUCTURED_ATTR, False):
            text = _quote(record.getMessage())
            if kv:
                text += "".join(f" {key}={_value(value)}" for key, value in kv.items())
        else:
            text = record.getMessage()
        if record.exc_info:
            text += ("" if text.endswith("\n") else "\n") + self.formatException(record.exc_info)
        return header + text


class JsonFormatter(logging.Formatter):
    """kube's JSON format: ts (seconds since the epoch), caller, msg, v (or err for errors), then the pairs."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"ts": round(record.created, 6), "caller": f"{record.filename}:{record.lineno}",
                                 "msg": record.getMessage()}
        if record.levelno >= logging.ERROR:
            if record.exc_info:
                entry["err"] = self.formatException(record.exc_info)
        else:
            entry["v"] = verbosity_of(record.levelno)
            if record.levelno >= logging.WARNING:  # klog's JSON has no warning level; keep the severity visible
                entry["severity"] = "warning"
        kv: Mapping[str, object] | None = getattr(record, KV_ATTR, None)
        if kv:
            for key, value in kv.items():
                entry[key] = value if isinstance(value, (bool, int, float, str, type(None))) else str(value)
        return json.dumps(entry, ensure_ascii=False, default=str, separators=(",", ":"))
