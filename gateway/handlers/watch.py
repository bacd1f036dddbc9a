"""Watch streams: chunked HTTP/1.1, one JSON event per line or one protobuf frame per event.

Without timeoutSeconds a watch lasts a random 30-60 minutes, as kube-apiserver's
(kubectl get -w exits when the server closes it). A client that disconnects ends the
watch and the core's watch with it: at once where aiohttp cancels handlers on disconnect
(handler_cancellation), else within DISCONNECT_POLL, as one timer per event loop checks every
idle stream's connection (`_Disconnects`: a watch waiting for events costs no timer of its own).

When to answer 200: kube-apiserver refuses a malformed watch with a plain error, and once the
watch has started reports failures as an ERROR event (the cacher's errWatcher). The core has no
"started" message, so a refusal is what it raises within ACCEPT_WINDOW; after that the headers
go out (a client's Watch() returns, as it does against kube at once), and a later refusal (initial
events from a resourceVersion the store has not reached, answered after the core's wait) is an ERROR event.

A client that stops reading holds at most the transport's 64 KiB, the socket buffers and one batch:
the next write waits for it, and after WRITE_TIMEOUT the connection is aborted and the stream ends
without an ERROR event, as kube-apiserver ends a watcher it finds unresponsive (the client re-watches
from its last resourceVersion). Meanwhile the core drops the watch if its events pile up (storage/broadcast.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator

import orjson
from aiohttp import web

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import params
from gateway import status as statuses
from gateway.client import CoreClient, CoreError
from gateway.codecs import json as json_codec
from gateway.codecs import protobuf as protobuf_codec
from gateway.faults import FAULTS_KEY
from gateway.handlers import respond
from gateway.handlers.request import Call
from gateway.negotiation import CodecName
from server.machinery import deadline, flowcontrol
from server.machinery.faults import OpenWatch

MIN_REQUEST_TIMEOUT = 1800  # seconds; kube-apiserver's --min-request-timeout default
ACCEPT_WINDOW = 0.2  # seconds the core has to refuse a watch before the 200 goes out
DISCONNECT_POLL = 1.0  # seconds between checks that an idle watch's client is still connected
SEND_BUFFER = 64 * 1024  # bytes of kernel send buffer a watch asks for (Linux doubles it)
WRITE_TIMEOUT = 10.0  # seconds a write may wait for a client that does not read before the watch is dropped


async def watch(client: CoreClient, call: Call, http: web.Request) -> web.StreamResponse:
    call.admit()
    options = params.list_options(call.query)
    options.watch = True
    if not options.timeoutSeconds:
        options.timeoutSeconds = int(MIN_REQUEST_TIMEOUT * (1 + random.random()))
    path = call.path
    if call.info.name:  # /watch/.../{name}: the name is a field selector (ListResource's hasName)
        options.fieldSelector = _name_selector(options.fieldSelector, call.info.name)
        path.name = ""
    stream = client.watch(core_pb2.WatchRequest(
        path=path, options=options, accept=respond.core_accept(call.out), view=call.view()))
    first = asyncio.ensure_future(_next(stream))
    response: web.StreamResponse | None = None
    gone = _Disconnects.of_loop().watch(http)
    faults = http.app.get(FAULTS_KEY)
    droppable: contextlib.AbstractContextManager[OpenWatch | None] = (
        faults.watching(call.info) if faults is not None else contextlib.nullcontext(None))
    dropping: OpenWatch | None = None
    try:
        done, _ = await asyncio.wait({first}, timeout=ACCEPT_WINDOW)
        batch = first.result() if done else None  # a refusal raises here, before any streaming
        classified = flowcontrol.current()
        response = web.StreamResponse(status=200, headers={
            "Content-Type": call.out.content_type, **(classified.headers() if classified is not None else {})})
        response.enable_chunked_encoding()
        await response.prepare(http)
        _bound_send_buffer(http)
        # from here the client's disconnect cancels this task, within DISCONNECT_POLL; so does a dropping fault
        with gone, droppable as dropping:
            if not done:
                batch = await first
            while batch is not None:
                await gone.write(response, _framed.of(call, batch))
                batch = await _next(stream)
    except CoreError as err:
        if response is None:
            raise
        with contextlib.suppress(ConnectionResetError):
            await _write(response, http, _error_frame(call, err.status))
    except ConnectionResetError:
        if response is None:
            raise
        return response  # the client went away, or stopped reading: nothing more to write
    except asyncio.CancelledError:
        dropped = dropping is not None and dropping.dropped
        if not (gone.fired or dropped):
            raise
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        assert response is not None  # registered only once the response had started
        if not dropped:
            return response  # the client went away or stopped reading: nothing more to write
    finally:
        if not first.done():
            first.cancel()
            with contextlib.suppress(asyncio.CancelledError, CoreError):
                await first
        await stream.aclose()  # type: ignore[attr-defined]
    assert response is not None  # every path that leaves it unset raised
    with contextlib.suppress(ConnectionResetError):
        await _write(response, http, b"", eof=True)
    return response


async def failed_at_once(call: Call, http: web.Request, status: meta_pb2.Status) -> web.StreamResponse:
    """A watch that starts and fails at once: 200, one ERROR event carrying `status`, the end (kube's answer to a
    watch from a resourceVersion its cache no longer holds)."""
    response = web.StreamResponse(status=200, headers={"Content-Type": call.out.content_type})
    response.enable_chunked_encoding()
    await response.prepare(http)
    with contextlib.suppress(ConnectionResetError):
        await _write(response, http, _error_frame(call, status), eof=True)
    return response


async def _write(response: web.StreamResponse, http: web.Request, data: bytes, *, eof: bool = False) -> None:
    """Write, or drop the connection when the client has not taken the bytes within WRITE_TIMEOUT.

    A write waits once the transport holds 64 KiB the client has not read, so a client that stops reading
    holds at most that, the kernel's socket buffers and one batch; after WRITE_TIMEOUT the connection is
    aborted (its unsent bytes dropped) and the watch ends without an ERROR event, as kube-apiserver ends a
    watcher it finds unresponsive: the client re-watches from its last resourceVersion, or re-lists.
    """
    try:
        with deadline.cut(WRITE_TIMEOUT):  # in this task, on the loop's shared timer: a write costs no task or timer
            await (response.write_eof(data) if eof else response.write(data))
    except TimeoutError:
        if http.transport is not None:
            http.transport.abort()
        raise ConnectionResetError("the watch's client stopped reading") from None


def _bound_send_buffer(http: web.Request) -> None:
    """Cap the kernel's send buffer for this stream (autotuning would let it grow to megabytes per watcher), so a
    client that stops reading is found after SEND_BUFFER and its window, not after megabytes of events written."""
    sock = http.transport.get_extra_info("socket") if http.transport is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)


async def _next(stream: AsyncIterator[core_pb2.WatchResponse]) -> core_pb2.WatchResponse | None:
    return await anext(stream, None)


class _Gone:
    """One watch's registration with its loop's `_Disconnects`, while it is a context manager's body."""

    __slots__ = ("_owner", "fired", "http", "task", "writing_since")

    def __init__(self, owner: _Disconnects, http: web.Request) -> None:
        self._owner = owner
        self.http = http
        self.task = asyncio.current_task()
        self.fired = False  # this watch's task was cancelled because its client had gone or stopped reading
        self.writing_since: float | None = None  # the loop's time when the write under way began

    async def write(self, response: web.StreamResponse, data: bytes) -> None:
        """`_write`'s contract, its WRITE_TIMEOUT enforced by the sweep (give or take DISCONNECT_POLL), so a
        write that does not wait costs no timer."""
        self.writing_since = self._owner.loop.time()
        try:
            await response.write(data)
        finally:
            self.writing_since = None

    def stalled(self, now: float) -> bool:
        """Whether the client has gone, or not taken a write's bytes within WRITE_TIMEOUT (then it is aborted)."""
        transport = self.http.transport
        if transport is None or transport.is_closing():
            return True
        if self.writing_since is not None and now - self.writing_since > WRITE_TIMEOUT:
            transport.abort()
            return True
        return False

    def __enter__(self) -> _Gone:
        self._owner.add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._owner.discard(self)


class _Disconnects:
    """The watches of one event loop that wait for their client to go: one timer checks them all.

    Every DISCONNECT_POLL, a watch whose connection is gone, or whose write has waited WRITE_TIMEOUT for its
    client (the connection is then aborted), has its task cancelled (`_Gone.fired` tells that cancellation
    from any other); the timer runs only while some watch is registered.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._watches: set[_Gone] = set()
        self._timer: asyncio.TimerHandle | None = None

    @classmethod
    def of_loop(cls) -> _Disconnects:
        loop = asyncio.get_running_loop()
        found = _disconnects.get(loop)
        if found is None:
            found = _disconnects[loop] = cls(loop)
        return found

    def watch(self, http: web.Request) -> _Gone:
        return _Gone(self, http)

    def add(self, gone: _Gone) -> None:
        self._watches.add(gone)
        if self._timer is None:
            self._timer = self.loop.call_later(DISCONNECT_POLL, self._sweep)

    def discard(self, gone: _Gone) -> None:
        self._watches.discard(gone)

    def _sweep(self) -> None:
        self._timer = None
        now = self.loop.time()
        for gone in [g for g in self._watches if g.stalled(now)]:
            self._watches.discard(gone)
            if gone.task is not None and not gone.task.done():
                gone.fired = True
                gone.task.cancel()
        if self._watches:
            self._timer = self.loop.call_later(DISCONNECT_POLL, self._sweep)


class _Framed:
    """The bytes of the WatchResponses framed last, by (message, output) identity: the watchers the core handed
    the same message (server/objects/watch.py) write the same bytes, framed once.

    Contract: an entry holds its message, so the message's id cannot be reused while it is cached.
    """

    SIZE = 64  # messages: more than the distinct (collection, output) pairs watched at one time

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[int, str, str, str], tuple[core_pb2.WatchResponse, bytes]] = OrderedDict()

    def of(self, call: Call, batch: core_pb2.WatchResponse) -> bytes:
        key = (id(batch), call.out.codec.value, call.api_version, call.resource.kind)
        found = self._entries.get(key)
        if found is not None and found[0] is batch:
            return found[1]
        data = b"".join(_frame(call, event) for event in batch.events)
        self._entries[key] = (batch, data)
        if len(self._entries) > self.SIZE:
            self._entries.popitem(last=False)
        return data


_disconnects: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Disconnects] = weakref.WeakKeyDictionary()
_framed = _Framed()


def _name_selector(selector: str, name: str) -> str:
    """The field selector of a watch of one object: its name, or the client's selector if that already
    requires this very name; any other selector is kube-apiserver's 400."""
    if not selector:
        return f"metadata.name={name}"
    for term in selector.split(","):
        field, op, value = _split_term(term)
        if field == "metadata.name" and op in ("=", "==") and value == name:
            return selector
    raise params.bad_request("fieldSelector metadata.name doesn't match requested name")


def _split_term(term: str) -> tuple[str, str, str]:
    for op in ("!=", "==", "="):
        field, found, value = term.partition(op)
        if found:
            return field.strip(), op, value.strip()
    return term.strip(), "", ""


def _frame(call: Call, event: core_pb2.WatchEvent) -> bytes:
    data, encoding = event.object.data, event.object.encoding
    api_version, kind = call.api_version, call.resource.kind
    if event.type == "ERROR":
        api_version, kind = "v1", "Status"
    if call.out.codec is CodecName.PROTOBUF:
        if encoding == core_pb2.ENCODING_JSON:  # a conversion (PartialObjectMetadata), or its Status
            converted = respond.as_protobuf(data)
            if converted is not None:
                data, api_version, kind = converted
                encoding = core_pb2.ENCODING_PROTOBUF
        if encoding == core_pb2.ENCODING_PROTOBUF:
            return protobuf_codec.encode_watch_event(event.type, data, api_version=api_version, kind=kind)
    return json_codec.encode_watch_event(event.type, data)


def _error_frame(call: Call, status: meta_pb2.Status) -> bytes:
    """The ERROR event of a watch that failed after it started, carrying the Status."""
    if call.out.codec is CodecName.PROTOBUF:
        return protobuf_codec.encode_watch_event(
            "ERROR", status.SerializeToString(deterministic=True), api_version="v1", kind="Status")
    return json_codec.encode_watch_event("ERROR", orjson.dumps(statuses.status_dict(status)))
