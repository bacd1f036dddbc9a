"""kube-apiserver's connection limits on the HTTP listener (gateway/connections.py), over raw sockets on
127.0.0.1: a half-sent request is closed after the header timeout, an idle keep-alive connection after
the idle timeout, the connection past the cap is reset and the cap frees as connections close, and
headers over 1 MiB (Go's MaxHeaderBytes) are kube's 431 with a Status body while a long labelSelector
or bearer token under it is served; nothing a client sends logs a traceback.

The limits are small and set per test, so each case takes well under a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from capstan.cli.inprocess import InProcessClient
from gateway.app import build_app, start_http
from gateway.connections import MAX_HEADER_BYTES, ConnectionLimits
from server.auth.config import INSECURE
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

TIMEOUT = 5.0  # longer than any limit under test: a read that takes this long means nothing closed
GET = b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@dataclass
class Gateway:
    port: int
    core: RunningCore

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port, limit=4 * MAX_HEADER_BYTES)


async def _start(tmp_path: Path, limits: ConnectionLimits) -> AsyncIterator[Gateway]:
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False)
    runner, port = await start_http(build_app(InProcessClient(core.guard)), "127.0.0.1", 0,
                                    connection_limits=limits)
    try:
        yield Gateway(port, core)
    finally:
        await runner.cleanup()
        await core.stop()
        await store.close()


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Gateway]:
    async for running in _start(tmp_path, ConnectionLimits(read_header_timeout=0.3, idle_timeout=0.6,
                                                           max_connections=3)):
        yield running


async def _closed_after(reader: asyncio.StreamReader) -> float:
    """Seconds until the server closes the connection (reading and dropping anything it answers)."""
    start = time.monotonic()
    while await asyncio.wait_for(reader.read(65536), TIMEOUT):
        pass
    return time.monotonic() - start


async def _answer(reader: asyncio.StreamReader) -> tuple[int, bytes, bytes]:
    """(code, head, body) of one HTTP/1.1 answer with a Content-Length."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    body = await asyncio.wait_for(reader.readexactly(length), TIMEOUT)
    return int(head.split()[1]), head, body


@pytest.mark.parametrize("sent", [
    b"",  # connected, nothing sent
    b"GET /version HT",  # half a request line
    b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1",  # half the headers
])
async def test_a_half_sent_request_is_closed_after_the_header_timeout(gateway: Gateway, sent: bytes) -> None:
    reader, writer = await gateway.open()
    writer.write(sent)
    assert 0.25 < await _closed_after(reader) < 2.0
    writer.close()


async def test_trickled_headers_do_not_extend_the_deadline(gateway: Gateway) -> None:
    reader, writer = await gateway.open()
    start = time.monotonic()
    for chunk in GET[:-2]:  # a byte every 50 ms: 2 s in all, were the connection not closed
        if reader.at_eof() or writer.transport.is_closing():
            break
        writer.write(bytes([chunk]))
        await asyncio.sleep(0.05)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(reader.read(1), 0.001)
    assert 0.25 < time.monotonic() - start < 1.5  # closed at the deadline, long before the 2 s trickle ends
    writer.close()


async def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout(gateway: Gateway) -> None:
    reader, writer = await gateway.open()
    writer.write(GET)
    assert (await _answer(reader))[0] == 200
    assert 0.5 < await _closed_after(reader) < 2.0
    writer.close()


async def test_a_next_request_on_a_keep_alive_connection_has_its_own_header_deadline(gateway: Gateway) -> None:
    reader, writer = await gateway.open()
    for _ in range(3):  # requests slower than the header timeout in all, each one quick
        writer.write(GET)
        assert (await _answer(reader))[0] == 200
        await asyncio.sleep(0.2)
    writer.write(GET[:10])
    assert 0.25 < await _closed_after(reader) < 0.55  # the header timeout, not the idle one
    writer.close()


async def _served(gateway: Gateway) -> bool:
    reader, writer = await gateway.open()
    try:
        writer.write(GET)
        return (await _answer(reader))[0] == 200
    except (ConnectionError, asyncio.IncompleteReadError):
        return False
    finally:
        writer.close()


async def test_the_connection_past_the_cap_is_reset_and_the_cap_frees_as_connections_close(
        gateway: Gateway) -> None:
    held = [await gateway.open() for _ in range(3)]
    for reader, writer in held:
        writer.write(GET)
        assert (await _answer(reader))[0] == 200  # each holds a slot, kept alive
    assert not await _served(gateway)
    held[0][1].close()
    await held[0][1].wait_closed()
    for _ in range(50):  # the slot is given back when the server sees the close
        if await _served(gateway):
            break
        await asyncio.sleep(0.02)
    else:
        pytest.fail("a closed connection's slot was never given back")
    for _, writer in held[1:]:
        writer.close()


def _status(code: int, reason: str, message: str) -> dict[str, object]:
    status: dict[str, object] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                 "message": message, "code": code}
    if reason:
        status["reason"] = reason
    return status


TOO_LARGE = _status(431, "", "Request Header Fields Too Large")
SELECTOR = ",".join(f"app{i}=v" for i in range(10_000))  # 10,000 terms, ~90 KB


@pytest.mark.parametrize(("request_bytes", "code", "status"), [
    pytest.param(b"GET /api/v1/namespaces/default/configmaps?labelSelector=" + SELECTOR.encode() +
                 b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 200, None, id="10,000-term labelSelector"),
    pytest.param(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 500_000 + b"\r\n\r\n",
                 200, None, id="one 500 KB header"),
    pytest.param(b"GET /version?" + b"a" * MAX_HEADER_BYTES + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                 431, TOO_LARGE, id="request line over 1 MiB"),
    pytest.param(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * MAX_HEADER_BYTES + b"\r\n\r\n",
                 431, TOO_LARGE, id="one header over 1 MiB"),
    pytest.param(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                 b"".join(b"X-H%d: %s\r\n" % (i, b"a" * 200_000) for i in range(6)) + b"\r\n",
                 431, TOO_LARGE, id="headers over 1 MiB together"),
    pytest.param(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nNo colon here\r\n\r\n",
                 400, _status(400, "BadRequest", "bad request: Invalid header token"), id="malformed header"),
    pytest.param(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"".join(b"X-H%d: 1\r\n" % i for i in range(5000))
                 + b"\r\n", 400, _status(400, "BadRequest", "bad request: Too many headers received"),
                 id="too many headers"),
])
async def test_header_sizes_as_kube_apiserver_bounds_them(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, request_bytes: bytes, code: int,
        status: dict[str, object] | None) -> None:
    caplog.set_level(logging.DEBUG, logger="aiohttp")
    async for gateway in _start(tmp_path, ConnectionLimits()):
        reader, writer = await gateway.open()
        writer.write(request_bytes)
        answered, head, body = await _answer(reader)
        writer.close()
    assert answered == code, body
    if status is not None:
        assert b"Content-Type: application/json" in head
        assert orjson.loads(body) == status
    assert [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info] == []
