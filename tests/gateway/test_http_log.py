"""kube's request log (httplog) at -v=3: one klog line per request with its verb, URI, latency, user agent, source
and status, through both transports; nothing below -v=3."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator

import pytest

from capstan.cli import logs
from tests.gateway.conftest import Server

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "logged"}}


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    """A buffer for the root logger's lines; the root logger's handlers and level are restored after."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stream = io.StringIO()
    try:
        yield stream
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)


@pytest.mark.parametrize(("verbosity", "method", "path", "expected"), [
    (3, "GET", "/api/v1/namespaces/default/configmaps?limit=5",
     r'"HTTP" verb="LIST" URI="/api/v1/namespaces/default/configmaps\?limit=5" latency="[0-9.]+(ms|µs|s)" '
     r'userAgent="capstan-test" srcIP="127\.0\.0\.1:\d+" resp=200$'),
    (3, "POST", "/api/v1/namespaces/default/configmaps",
     r'"HTTP" verb="POST" URI="/api/v1/namespaces/default/configmaps" .* resp=201$'),
    (3, "GET", "/api/v1/namespaces/default/configmaps/missing",
     r'"HTTP" verb="GET" URI="/api/v1/namespaces/default/configmaps/missing" .* resp=404$'),
    (3, "GET", "/healthz", r'"HTTP" verb="GET" URI="/healthz" .* resp=200$'),
    (2, "GET", "/api/v1/namespaces/default/configmaps", None),
])
async def test_request_log(server: Server, captured: io.StringIO, verbosity: int, method: str, path: str,
                           expected: str | None) -> None:
    logs.configure(verbosity, "text", captured)
    resp = await server.request(method, path, json=CM if method == "POST" else None,
                                headers={"User-Agent": "capstan-test"})
    assert resp.status < 500
    lines = [line.split("] ", 1)[1] for line in captured.getvalue().splitlines() if '"HTTP"' in line]
    if expected is None:
        assert lines == []
    else:
        assert len(lines) == 1 and re.match(expected, lines[0]), lines
