"""capstan/cli/logs.py: klog's verbosity, its text header and kube's JSON lines, and the flags at V(1)."""

from __future__ import annotations

import argparse
import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from capstan.cli import logs

KLOG_HEADER = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ test_logs\.py:\d+\] ")


@pytest.fixture
def restored_root() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)


def _emit(verbosity: int, fmt: str, write: str) -> str:
    stream = io.StringIO()
    logs.configure(verbosity, fmt, stream)
    logger = logging.getLogger("capstan.test")
    if write == "info":
        logger.info("started %s", "core")
    elif write == "v2":
        logger.log(logs.level(2), "detail")
    elif write == "warning":
        logger.warning("careful")
    elif write == "error":
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("failed")
    elif write == "http":
        logs.info_s(logger, 3, "HTTP", verb="GET", URI="/api/v1/pods", latency="1.2ms", resp=200)
    elif write == "debug":
        logger.debug("python debug")
    return stream.getvalue()


@pytest.mark.parametrize(("verbosity", "write", "expected"), [
    (0, "info", 'I started core'),
    (0, "v2", None),
    (2, "v2", "I detail"),
    (0, "warning", "W careful"),
    (0, "error", "E failed"),
    (0, "http", None),
    (3, "http", 'I "HTTP" verb="GET" URI="/api/v1/pods" latency="1.2ms" resp=200'),
    (9, "debug", None),
    (10, "debug", "I python debug"),
])
def test_text(restored_root: None, verbosity: int, write: str, expected: str | None) -> None:
    out = _emit(verbosity, "text", write)
    if expected is None:
        assert out == ""
        return
    first = out.splitlines()[0]
    assert KLOG_HEADER.match(first), first
    assert first[0] + " " + KLOG_HEADER.sub("", first) == expected


@pytest.mark.parametrize(("verbosity", "write", "expected"), [
    (0, "info", {"msg": "started core", "v": 0}),
    (2, "v2", {"msg": "detail", "v": 2}),
    (3, "http", {"msg": "HTTP", "v": 3, "verb": "GET", "URI": "/api/v1/pods", "latency": "1.2ms", "resp": 200}),
    (0, "error", {"msg": "failed"}),
])
def test_json(restored_root: None, verbosity: int, write: str, expected: dict[str, object]) -> None:
    entry = json.loads(_emit(verbosity, "json", write).splitlines()[0])
    assert isinstance(entry.pop("ts"), float)
    assert re.fullmatch(r"test_logs\.py:\d+", entry.pop("caller"))
    if write == "error":
        assert "ValueError: boom" in entry.pop("err")
    assert entry == expected


@pytest.mark.parametrize(("argv", "expected"), [
    ([], (0, "text")),
    (["-v", "3"], (3, "text")),
    (["--v=4", "--logging-format=json"], (4, "json")),
    (["-v2"], (2, "text")),
])
def test_flags(argv: list[str], expected: tuple[int, str]) -> None:
    parser = argparse.ArgumentParser()
    logs.add_flags(parser)
    args = parser.parse_args(argv)
    assert (args.v, args.logging_format) == expected


@pytest.mark.parametrize(("verbosity", "expected"), [
    (0, []),
    (1, ['FLAG: --bind-address="127.0.0.1"', 'FLAG: --etcd-servers="a,b"', 'FLAG: --insecure="true"',
         'FLAG: --token-auth-file=""']),
])
def test_log_flags(restored_root: None, verbosity: int, expected: list[str]) -> None:
    stream = io.StringIO()
    logs.configure(verbosity, "text", stream)
    logs.log_flags(logging.getLogger("capstan.test"), {"insecure": True, "bind_address": "127.0.0.1",
                                                       "etcd_servers": ("a", "b"), "token_auth_file": None})
    assert [line.split("] ", 1)[1] for line in stream.getvalue().splitlines()] == expected
