"""Connection limits at the front of the HTTP transport: what kube-apiserver's http.Server bounds, once.

aiohttp alone holds a half-sent request until its 3,630 s keep-alive timer, accepts every connection
until the process runs out of file descriptors, and answers oversized or malformed headers with plain
text and a logged traceback. kube-apiserver (apiserver/pkg/server/secure_serving.go) serves with
ReadHeaderTimeout 32 s, IdleTimeout 90 s and MaxHeaderBytes 1 MiB, on a listener whose backlog is the
kernel's somaxconn. This module gives the gateway the same, plus a cap on open connections (Go relies on
its scheduler for that; one asyncio process relies on its descriptor limit, so the cap keeps below it):

- a connection that has not sent a request's complete headers `read_header_timeout` after it was accepted
  (or after the first byte following an idle keep-alive) is closed without an answer, as Go closes it;
  the TLS handshake counts against the same deadline (Go's tlsHandshakeTimeout);
- an idle keep-alive connection is closed after `idle_timeout` (aiohttp's keepalive_timeout);
- request line and headers over `max_header_bytes` in all are answered 431 Request Header Fields Too
  Large, and other unparsable requests 400, each with a Status body and without a traceback;
- past `max_connections` open connections, a new one is accepted and reset at once, so the listener's
  backlog never fills with clients that will not be served and descriptors are never exhausted.

The timers cost nothing per request on a keep-alive connection that sends whole requests: one comparison
per received chunk; a timer is armed only once per request, when its first bytes arrive.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
import ssl
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import LineTooLong
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from gateway.client import failure
from gateway.handlers import respond

log = logging.getLogger(__name__)

READ_HEADER_TIMEOUT = 32.0  # kube-apiserver's ReadHeaderTimeout: "just shy of requestTimeoutUpperBound"
IDLE_TIMEOUT = 90.0  # kube-apiserver's IdleTimeout: "matches http.DefaultTransport keep-alive timeout"
MAX_HEADER_BYTES = 1 << 20  # kube-apiserver's MaxHeaderBytes: request line and every header, together
MAX_HEADERS = 4096  # aiohttp also counts fields (128 by default); Go does not, so only bytes bind in practice
FD_RESERVE = 1024  # descriptors kept for the store, logs, gRPC and outgoing connections
TOO_LARGE = "Request Header Fields Too Large"  # Go's status text for 431
RST_AVOIDANCE_DELAY = 0.5  # Go's rstAvoidanceDelay: how long a refused request's connection stays half-closed


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What one HTTP listener allows; the defaults are kube-apiserver's (max_connections: see
    default_max_connections)."""

    read_header_timeout: float = READ_HEADER_TIMEOUT
    idle_timeout: float = IDLE_TIMEOUT
    max_connections: int = 0  # 0: default_max_connections() at start
    max_header_bytes: int = MAX_HEADER_BYTES
    backlog: int = 0  # 0: the kernel's somaxconn, as Go listens


KUBE_LIMITS = ConnectionLimits()


def raise_nofile_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit, as Go's runtime does at start (Go 1.19); returns
    the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            log.warning("could not raise the open file limit from %d to %d", soft, hard)
    return soft


def default_max_connections() -> int:
    """Half the descriptors left after a reserve for everything else: the other half stays for the gRPC
    port and for connections the cap resets as they arrive."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(64, (soft - FD_RESERVE) // 2)


def somaxconn() -> int:
    """The kernel's cap on a listen backlog (what Go's net package listens with)."""
    try:
        return max(128, min(int(Path("/proc/sys/net/core/somaxconn").read_text()), 65535))
    except (OSError, ValueError):
        return socket.SOMAXCONN


def _status_answer(code: int, phrase: str, reason: str, message: str) -> bytes:
    """A complete HTTP/1.1 answer carrying a Status, that closes the connection."""
    body = respond.status(None, failure(code, reason, message)).body
    assert isinstance(body, bytes)
    head = (f"HTTP/1.1 {code} {phrase}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode() + body


# kube-apiserver has no StatusReason for 431 (Go answers it before the API's handlers): reason is empty,
# as client-go reads Go's answer.
_HEADERS_TOO_LARGE = _status_answer(431, TOO_LARGE, "", TOO_LARGE)


class _Connection(RequestHandler):
    """aiohttp's connection handler with a header-read deadline, a total header size, Status answers for
    unparsable requests, and a slot in the site's connection count released when it closes."""

    def __init__(self, site: LimitedSite, deadline: float, **options: Any) -> None:
        super().__init__(site.web_server, **options)
        self._site = site
        self._first_deadline = deadline  # of the TLS handshake and the first request's headers
        # While a request's headers are awaited, the time they are due; None between requests. The one timer
        # pending at a time is re-armed when it fires early for a later deadline, so a keep-alive request costs
        # no timer of its own.
        self._header_deadline: float | None = None
        self._header_timer: asyncio.TimerHandle | None = None
        self._header_requests = 0  # requests parsed when the timer was armed: one more disarms it
        self._header_bytes = 0
        self._released = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm(self._first_deadline)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        self.release()
        super().connection_lost(exc)

    def release(self) -> None:
        """Give the connection's slot back, once."""
        if not self._released:
            self._released = True
            self._site.open -= 1

    def data_received(self, data: bytes) -> None:
        if self._header_deadline is None:
            if self._waiter is None or not data or self._close:  # a body, bytes behind a request, or closing
                super().data_received(data)
                return
            self._arm(self._loop.time() + self._site.limits.read_header_timeout)  # a request's first bytes
        self._header_bytes += len(data)
        if self._header_bytes > self._site.limits.max_header_bytes:
            self._answer_too_large()
            return
        super().data_received(data)
        if self._request_count != self._header_requests:
            self._disarm()

    def _arm(self, deadline: float) -> None:
        self._header_requests = self._request_count
        self._header_bytes = 0
        self._header_deadline = deadline
        if self._header_timer is not None and self._header_timer.when() > deadline:
            self._header_timer.cancel()  # the first request's deadline, when later than this one's
            self._header_timer = None
        if self._header_timer is None:
            self._header_timer = self._loop.call_at(deadline, self._timer_fired)

    def _disarm(self) -> None:
        self._header_deadline = None  # the pending timer, if any, finds nothing due when it fires

    def _timer_fired(self) -> None:
        self._header_timer = None
        deadline = self._header_deadline
        if deadline is None:
            return
        if self._loop.time() < deadline:  # armed for an earlier request's deadline
            self._header_timer = self._loop.call_at(deadline, self._timer_fired)
            return
        self._header_deadline = None
        if self.transport is not None and self._request_count == self._header_requests:
            self._site.timed_out += 1
            self.force_close()  # Go closes a connection whose headers are late without answering

    def _answer_too_large(self) -> None:
        """Answer 431 and close as Go does (closeWriteAndWait): the write side at once, the connection a
        moment later, reading and dropping what still arrives, so that closing with unread bytes does not
        reset the connection before the client has read the answer."""
        self._disarm()
        self._close = True  # aiohttp's own flag: nothing more is parsed
        if self.transport is not None:
            self.transport.write(_HEADERS_TOO_LARGE)
            if self.transport.can_write_eof():
                self.transport.write_eof()
        self._loop.call_later(RST_AVOIDANCE_DELAY, self.force_close)

    def handle_error(self, request: BaseRequest, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        """A request aiohttp could not parse is answered with a Status, and logged without a traceback:
        it is the client's mistake, not the server's."""
        if status != 400:
            return super().handle_error(request, status, exc, message)
        log.debug("unparsable request from %s: %s", request.remote, exc)
        if isinstance(exc, LineTooLong):
            response = respond.status(None, failure(431, "", TOO_LARGE))
        else:
            reason = (message or str(exc)).splitlines()[0].rstrip(": ")  # aiohttp points at the byte below
            response = respond.status(None, failure(400, "BadRequest", f"bad request: {reason}"))
        response.force_close()
        return response


class LimitedSite(web.BaseSite):
    """A listening socket served by `runner`'s application under `limits`: an accept loop of its own, so
    that a connection is counted from accept (before its TLS handshake) until it closes."""

    def __init__(self, runner: web.BaseRunner, sock: socket.socket, *, limits: ConnectionLimits,
                 ssl_context: ssl.SSLContext | None = None, options: dict[str, Any]) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self.limits = limits
        self.max_connections = limits.max_connections or default_max_connections()
        self.open = 0  # connections accepted and not yet closed
        self.refused = 0  # connections reset at once because `max_connections` were open
        self.timed_out = 0  # connections closed because their headers were late
        self._sock = sock
        self._options = options
        self._accepting: asyncio.Task[None] | None = None
        self._starting: set[asyncio.Task[None]] = set()
        host, port = sock.getsockname()[:2]
        self._name = f"{'https' if ssl_context else 'http'}://{host}:{port}"

    @property
    def name(self) -> str:
        return self._name

    @property
    def web_server(self) -> web.Server:
        server = self._runner.server
        assert server is not None
        return server

    async def start(self) -> None:
        await super().start()
        self._sock.setblocking(False)
        self._accepting = asyncio.get_running_loop().create_task(self._accept())

    async def stop(self) -> None:
        if self._accepting is not None:
            self._accepting.cancel()
            await asyncio.gather(self._accepting, return_exceptions=True)
            self._accepting = None
        for task in list(self._starting):
            task.cancel()
        await asyncio.gather(*self._starting, return_exceptions=True)
        self._sock.close()
        await super().stop()

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(self._sock)
            except OSError as err:  # out of descriptors or buffers: wait, as Go's accept loop does
                log.warning("accept failed: %s", err)
                await asyncio.sleep(0.1)
                continue
            if self.open >= self.max_connections:
                self.refused += 1
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
                conn.close()
                continue
            self.open += 1
            task = loop.create_task(self._serve(conn, loop.time() + self.limits.read_header_timeout))
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _serve(self, conn: socket.socket, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        protocol = _Connection(self, deadline, loop=loop, **self._options)
        handshake = max(deadline - loop.time(), 0.001) if self._ssl_context else None
        try:
            await loop.connect_accepted_socket(lambda: protocol, conn, ssl=self._ssl_context,
                                               ssl_handshake_timeout=handshake)
        except (TimeoutError, OSError, asyncio.CancelledError) as err:  # ssl.SSLError is an OSError
            protocol.release()  # the handshake failed: the connection never reached the handler
            conn.close()
            if isinstance(err, asyncio.CancelledError):
                raise
