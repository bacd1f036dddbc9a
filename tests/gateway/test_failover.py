"""`capstan gateway --core A,B`: two real cores over one store (one process shares its watch fan-out, as cores
over one etcd share etcd's watch), the real aiohttp gateway over a PoolClient, and real faults: a core's gRPC
server stopped mid-traffic, and a TCP proxy in front of each core that can lose a request, or its answer
after the core applied it (the two sides of "did the write happen?").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import pytest

import gateway.handlers.context
from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.app import build_app, start_http
from gateway.client import CoreError
from gateway.transport import resume
from gateway.transport.pool import PoolClient
from server.auth.config import INSECURE
from server.service.grpc_server import stop_grpc
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.memory import MemoryStore
from tests.gateway.conftest import TIMEOUT, Response, Stream

Obj = dict[str, Any]
CMS = "/api/v1/namespaces/default/configmaps"
HEADERS_FRAME = 0x1


@dataclass(eq=False)
class Fault:
    """One armed fault, taken by the first proxied connection that carries a request after arming: "lose" drops
    the request and cuts the connection (the core never saw it); "answer" lets the request through and holds
    the core's answer until `cut` (the core applied it, the gateway never learns)."""

    mode: str = ""
    taken: asyncio.Event = field(default_factory=asyncio.Event)
    cutting: asyncio.Event = field(default_factory=asyncio.Event)

    def arm(self, mode: str) -> None:
        self.mode = mode
        self.taken.clear()
        self.cutting.clear()


class Proxy:
    """A TCP proxy in front of one core's gRPC port; `carried` counts the bytes of requests it forwarded."""

    def __init__(self, target_port: int, fault: Fault) -> None:
        self.target_port = target_port
        self.fault = fault
        self.carried = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        faulted = asyncio.Event()

        async def upstream() -> None:
            while chunk := await reader.read(65536):
                if self.fault.mode and not self.fault.taken.is_set() and _opens_a_call(chunk):
                    self.fault.taken.set()
                    faulted.set()
                    if self.fault.mode == "lose":
                        break
                self.carried += len(chunk)
                up_writer.write(chunk)

        async def downstream() -> None:
            while chunk := await up_reader.read(65536):
                if faulted.is_set():
                    await self.fault.cutting.wait()
                    break
                writer.write(chunk)

        tasks = {asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())}
        self._tasks |= tasks
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        self._tasks -= tasks
        writer.transport.abort()
        up_writer.transport.abort()


def _opens_a_call(chunk: bytes) -> bool:
    """Whether bytes a gRPC client wrote hold an HTTP/2 HEADERS frame (a call), not just its PINGs and window
    updates: each frame is a 9-byte header (24-bit length, type, flags, stream) and its payload."""
    offset = 0
    while offset + 9 <= len(chunk):
        if chunk[offset + 3] == HEADERS_FRAME:
            return True
        offset += 9 + int.from_bytes(chunk[offset:offset + 3], "big")
    return False


@dataclass
class Cluster:
    url: str
    session: aiohttp.ClientSession
    store: MemoryStore
    cores: list[RunningCore]
    proxies: list[Proxy]
    fault: Fault

    async def request(self, method: str, path: str, json: Obj | list[Obj] | None = None,
                      content_type: str = "application/json") -> Response:
        data = orjson.dumps(json) if json is not None else None
        headers = {"Content-Type": content_type} if json is not None else {}

        async def exchange() -> Response:
            async with self.session.request(method, self.url + path, data=data, headers=headers) as resp:
                return Response(resp.status, resp.headers, await resp.read())

        return await asyncio.wait_for(exchange(), TIMEOUT)

    async def stop_first_core(self) -> None:
        """Stops core 0 at once and lets the gateway find out before the test writes: a create sent while the
        gateway's channel still looks connected may have reached the core as it died, and is answered 504 (it
        is never retried); reads are, so two of them, meeting each core in turn, mark core 0 down first."""
        await stop_grpc(self.cores[0].grpc, grace=0)
        for _ in self.cores:
            assert (await self.request("GET", CMS)).status == 200

    async def create(self, name: str, namespace: str = "default") -> Obj:
        resp = await self.request("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                                  {"metadata": {"name": name}, "data": {"k": "v"}})
        assert resp.status == 201, resp.body
        return resp.json()


@pytest.fixture(autouse=True)
def cached_discovery(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway asks the core for discovery once, so each HTTP request below is exactly one core call and the
    pool's round-robin (and an armed fault) meets the call the test makes."""
    monkeypatch.setattr(gateway.handlers.context, "RECHECK_AFTER", 3600.0)


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    store = await MemoryStore.open(StoreOptions(compact_interval=0, future_wait=0.5))
    cores = [await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE,
                              namespace_controllers=False) for _ in range(2)]
    fault = Fault()
    proxies = [Proxy(core.grpc_port, fault) for core in cores]
    for proxy in proxies:
        await proxy.start()
    client = PoolClient([f"127.0.0.1:{proxy.port}" for proxy in proxies], probe_interval=0.1)
    runner, port = await start_http(build_app(client), "127.0.0.1", 0)
    session = aiohttp.ClientSession()
    try:
        yield Cluster(f"http://127.0.0.1:{port}", session, store, cores, proxies, fault)
    finally:
        await session.close()
        await runner.cleanup()
        await client.close()
        for proxy in proxies:
            await proxy.stop()
        for core in cores:
            await core.stop()
        await store.close()


async def test_calls_are_balanced_over_the_cores(cluster: Cluster) -> None:
    await cluster.request("GET", CMS)
    before = [proxy.carried for proxy in cluster.proxies]
    for _ in range(10):
        assert (await cluster.request("GET", CMS)).status == 200
    assert all(proxy.carried > carried for proxy, carried in zip(cluster.proxies, before, strict=True))


async def test_reads_and_writes_continue_when_a_core_stops(cluster: Cluster) -> None:
    await cluster.create("before")
    await stop_grpc(cluster.cores[0].grpc, grace=0)
    for i in range(6):  # every call meets the stopped core in turn: none may fail
        assert (await cluster.request("GET", f"{CMS}/before")).status == 200
        assert (await cluster.request("GET", CMS)).status == 200
        await cluster.create(f"after-{i}")  # a create is sent only where the channel connects


# (fault, method, path, body, content type, status, whether the write is in the store afterwards)
# "lose": the request never reached a core; "answer": the core applied it and its answer was lost.
FAULTS = [
    ("lose", "GET", f"{CMS}/cm", None, "", 200, False),
    ("lose", "PUT", f"{CMS}/cm", "unconditional", "", 504, False),
    ("lose", "PUT", f"{CMS}/cm", "conditional", "", 200, True),
    ("lose", "PATCH", f"{CMS}/cm", "conditional", "application/merge-patch+json", 200, True),
    ("lose", "PATCH", f"{CMS}/cm", "json-test", "application/json-patch+json", 200, True),
    ("lose", "PATCH", f"{CMS}/cm", "unconditional", "application/merge-patch+json", 504, False),
    ("lose", "POST", CMS, "new", "", 504, False),
    ("lose", "POST", f"{CMS}?dryRun=All", "new", "", 201, False),
    ("lose", "DELETE", f"{CMS}/cm", "uid", "", 200, True),
    ("lose", "DELETE", f"{CMS}/cm", None, "", 504, False),
    ("answer", "PUT", f"{CMS}/cm", "unconditional", "", 504, True),
    ("answer", "PUT", f"{CMS}/cm", "conditional", "", 409, True),
    ("answer", "DELETE", f"{CMS}/cm", "uid", "", 404, True),
    ("answer", "DELETE", f"{CMS}/cm", "resourceVersion", "", 404, True),
    ("answer", "POST", CMS, "new", "", 504, True),
]


def _body(kind: str | None, live: Obj) -> Obj | list[Obj] | None:
    meta = live["metadata"]
    changed = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "changed"}}
    return {
        None: None,
        "unconditional": {**changed, "metadata": {"name": "cm"}},
        "conditional": {**changed, "metadata": {"name": "cm", "resourceVersion": meta["resourceVersion"]}},
        "json-test": [{"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]},
                      {"op": "replace", "path": "/data/k", "value": "changed"}],
        "new": {**changed, "metadata": {"name": "new"}},
        "uid": {"preconditions": {"uid": meta["uid"]}},
        "resourceVersion": {"preconditions": {"resourceVersion": meta["resourceVersion"]}},
    }[kind]


@pytest.mark.parametrize(("mode", "method", "path", "body", "content_type", "status", "applied"), FAULTS)
async def test_a_call_whose_core_died_is_retried_only_when_safe(
    cluster: Cluster, mode: str, method: str, path: str, body: str | None, content_type: str, status: int,
    applied: bool,
) -> None:
    live = await cluster.create("cm")
    revision = cluster.store.current_revision()
    cluster.fault.arm(mode)
    call = asyncio.ensure_future(cluster.request(method, path, _body(body, live), content_type or "application/json"))
    await asyncio.wait_for(cluster.fault.taken.wait(), TIMEOUT)
    if mode == "answer":
        while cluster.store.current_revision() == revision:  # the core applied it; its answer is held
            await asyncio.sleep(0.01)
    cluster.fault.cutting.set()
    resp = await call
    assert resp.status == status, resp.body
    if status == 504:
        assert resp.json()["reason"] == "Timeout"
        assert "Retry-After" not in resp.headers  # no client may send a write twice blindly
    if method != "GET":
        # Applied exactly once, whoever applied it: a retry after an applied write changed nothing more.
        assert cluster.store.current_revision() == revision + (1 if applied else 0)


async def _watch_events(stream: Stream, count: int) -> list[Obj]:
    events: list[Obj] = []
    while len(events) < count:
        events.extend(await stream.lines(1))
        if events[-1]["type"] == "ERROR":
            break
    return events


@contextlib.asynccontextmanager
async def _watch(cluster: Cluster, query: str) -> AsyncIterator[Stream]:
    async with cluster.session.get(f"{cluster.url}{CMS}?watch=1&{query}") as resp:
        assert resp.status == 200
        yield Stream(resp)


@pytest.mark.parametrize("options", ["", "&labelSelector=app!=x", "&timeoutSeconds=60"])
async def test_a_watch_resumes_on_another_core_without_gap_or_duplicate(cluster: Cluster, options: str) -> None:
    listed = (await cluster.request("GET", CMS)).json()["metadata"]["resourceVersion"]
    query = f"resourceVersion={listed}{options}"
    async with _watch(cluster, query) as first, _watch(cluster, query) as second:  # one on each core
        created = [await cluster.create(f"cm-{i}") for i in range(10)]
        await cluster.stop_first_core()
        created += [await cluster.create(f"cm-{i}") for i in range(10, 25)]
        expected = [obj["metadata"]["resourceVersion"] for obj in created]
        for stream in (first, second):
            events = await _watch_events(stream, len(expected))
            assert [event["type"] for event in events] == ["ADDED"] * len(expected)
            assert [event["object"]["metadata"]["resourceVersion"] for event in events] == expected


async def test_a_resumed_watch_whose_revision_is_compacted_ends_with_expired(cluster: Cluster) -> None:
    listed = (await cluster.request("GET", CMS)).json()["metadata"]["resourceVersion"]
    async with _watch(cluster, f"resourceVersion={listed}") as first, \
            _watch(cluster, f"resourceVersion={listed}") as second:
        await cluster.create("seen")
        for stream in (first, second):
            assert (await stream.lines(1))[0]["type"] == "ADDED"
        await cluster.create("elsewhere", namespace="kube-system")  # not watched: the watchers stay behind it
        await cluster.store.compact(cluster.store.current_revision())
        await cluster.stop_first_core()
        await cluster.create("after")
        answers = [(await stream.lines(1))[0] for stream in (first, second)]
    errors = [event["object"] for event in answers if event["type"] == "ERROR"]
    assert [(status["code"], status["reason"]) for status in errors] == [(410, "Expired")]
    assert [event["object"]["metadata"]["name"] for event in answers if event["type"] == "ADDED"] == ["after"]


async def test_a_watch_cut_during_its_initial_state_ends_with_expired(cluster: Cluster) -> None:
    for i in range(3):
        await cluster.create(f"cm-{i}")
    async with _watch(cluster, "") as first, _watch(cluster, "") as second:
        for stream in (first, second):
            assert [event["type"] for event in await stream.lines(3)] == ["ADDED"] * 3
        await cluster.stop_first_core()
        await cluster.create("after")
        answers = [(await stream.lines(1))[0] for stream in (first, second)]
    # The initial ADDEDs come in name order, not revision order: the cut one's position is lost, and says so.
    assert sorted(event["type"] for event in answers) == ["ADDED", "ERROR"]
    assert next(event["object"]["code"] for event in answers if event["type"] == "ERROR") == 410


def _event(kind: str, version: str, *, protobuf: bool = False) -> core_pb2.WatchEvent:
    if protobuf:
        partial = meta_pb2.PartialObjectMetadata()
        partial.metadata.resourceVersion = version
        return core_pb2.WatchEvent(type=kind, object=core_pb2.RawObject(
            encoding=core_pb2.ENCODING_PROTOBUF, data=partial.SerializeToString()))
    return core_pb2.WatchEvent(type=kind, object=core_pb2.RawObject(
        encoding=core_pb2.ENCODING_JSON, data=orjson.dumps({"metadata": {"resourceVersion": version}})))


# (the watch's resourceVersion, sendInitialEvents, batches forwarded, the reopened resourceVersion or "410")
POSITIONS: list[tuple[str, bool | None, list[list[core_pb2.WatchEvent]], str]] = [
    ("4", None, [], "4"),
    ("", None, [], ""),
    ("4", None, [[_event("ADDED", "7")]], "7"),
    ("4", None, [[_event("ADDED", "7"), _event("MODIFIED", "8", protobuf=True)]], "8"),
    ("4", None, [[_event("ADDED", "7")], [_event("BOOKMARK", "9")]], "9"),
    ("", None, [[_event("ADDED", "5"), _event("ADDED", "3")]], "410"),
    ("0", None, [[_event("ADDED", "5")], [_event("ADDED", "3")], [_event("DELETED", "8")]], "8"),
    ("0", None, [[_event("ADDED", "5")], [_event("BOOKMARK", "6")]], "6"),
    ("4", True, [[_event("ADDED", "3")]], "410"),
    ("4", True, [[_event("ADDED", "3")], [_event("BOOKMARK", "6")]], "6"),
]


@pytest.mark.parametrize(("version", "initial", "batches", "reopened"), POSITIONS)
def test_a_watch_is_reopened_after_the_last_event_it_forwarded(
    version: str, initial: bool | None, batches: list[list[core_pb2.WatchEvent]], reopened: str,
) -> None:
    request = core_pb2.WatchRequest(path=core_pb2.ResourcePath(version="v1", resource="configmaps"))
    request.options.resourceVersion = version
    request.options.labelSelector = "app=x"
    request.options.timeoutSeconds = 30
    if initial is not None:
        request.options.sendInitialEvents = initial
        request.options.resourceVersionMatch = "NotOlderThan"
    position = resume.Position(request, now=100.0)
    for events in batches:
        position.forwarded(core_pb2.WatchResponse(events=events))
    if reopened == "410":
        with pytest.raises(CoreError) as caught:
            position.reopen(now=110.0)
        assert (caught.value.status.code, caught.value.status.reason) == (410, "Expired")
        return
    again = position.reopen(now=110.0)
    assert again is not None
    assert (again.options.resourceVersion, again.options.labelSelector, again.options.timeoutSeconds) == (
        reopened, "app=x", 20)
    if batches:
        assert not again.options.HasField("sendInitialEvents")
        assert not again.options.HasField("resourceVersionMatch")
    assert position.reopen(now=130.0) is None  # its timeout has passed: it ends as it would have
