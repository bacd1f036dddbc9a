"""A real gateway for every HTTP test: LMDB in tmp_path, the core on a gRPC port 0, the aiohttp app on
HTTP port 0, and an aiohttp client session against it.

Every test runs twice, once per CoreClient transport: in-process (what `capstan serve` runs) and a real
gRPC channel (what `capstan gateway --core ADDR` runs). The HTTP answers must not differ.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

import gateway.handlers.watch
from capstan.cli.inprocess import InProcessClient
from gateway.app import build_app, start_http
from gateway.client import CoreClient
from gateway.transport.grpc import GrpcClient
from server.auth.config import INSECURE
from server.callouts import metrics as webhook_metrics
from server.machinery import apimetrics
from server.objects.storageobjects import StorageObjectsCounter
from server.startup import apienablement
from server.startup.apienablement import ApiEnablement
from server.startup.app import RunningCore
from storage import StoreOptions
from tests import bootstrapped

TIMEOUT = 10.0  # seconds any single HTTP exchange may take before the test fails instead of hanging

Obj = dict[str, Any]


@dataclass
class Server:
    """The running gateway: its base URL, the session to call it with, and the core behind it."""

    url: str
    session: aiohttp.ClientSession
    core: RunningCore
    client: CoreClient
    transport: str

    def revision(self) -> int:
        """The store's current revision: a write raised it, a refused or dry-run one did not."""
        return self.core.core.context.store.current_revision()

    async def request(
        self, method: str, path: str, *, body: bytes | None = None, json: Obj | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        """One complete exchange: the whole body is read before returning."""
        data = orjson.dumps(json) if json is not None else body
        hdrs = dict(headers or {})
        if json is not None:
            hdrs.setdefault("Content-Type", "application/json")

        async def exchange() -> Response:
            skip = () if "Content-Type" in hdrs else ("Content-Type",)  # no body type unless the test names one
            async with self.session.request(
                method, self.url + path, data=data, headers=hdrs, skip_auto_headers=skip
            ) as resp:
                return Response(resp.status, resp.headers, await resp.read())

        return await asyncio.wait_for(exchange(), TIMEOUT)

    @contextlib.asynccontextmanager
    async def watch(self, path: str, *, headers: dict[str, str] | None = None) -> AsyncIterator[Stream]:
        """A streaming GET: the response once its headers are in, its body read as the test asks."""
        async with self.session.get(self.url + path, headers=headers or {}) as resp:
            yield Stream(resp)

    async def create(self, path: str, obj: Obj) -> Obj:
        """POST that must succeed (201); the created object."""
        resp = await self.request("POST", path, json=obj)
        assert resp.status == 201, resp.body
        return resp.json()


@dataclass
class Response:
    status: int
    headers: Any  # multidict.CIMultiDictProxy[str]
    body: bytes

    def json(self) -> Obj:
        doc = orjson.loads(self.body)
        assert isinstance(doc, dict), doc
        return doc

    @property
    def content_type(self) -> str:
        return str(self.headers.get("Content-Type", ""))


@dataclass
class Stream:
    """A chunked response read incrementally: JSON lines or length-prefixed protobuf frames."""

    response: aiohttp.ClientResponse
    buffer: bytes = field(default=b"")
    consumed: bytes = field(default=b"")  # every byte handed out so far, as it came
    ended: bool = False

    @property
    def status(self) -> int:
        return self.response.status

    @property
    def headers(self) -> Any:
        return self.response.headers

    async def _fill(self) -> None:
        chunk = await asyncio.wait_for(self.response.content.readany(), TIMEOUT)
        if not chunk:
            self.ended = True
        self.buffer += chunk

    async def lines(self, count: int) -> list[Obj]:
        """The next count JSON lines, each parsed."""
        while self.buffer.count(b"\n") < count:
            assert not self.ended, f"stream ended after {self.buffer!r}"
            await self._fill()
        out = []
        for _ in range(count):
            line, _, self.buffer = self.buffer.partition(b"\n")
            self.consumed += line + b"\n"
            doc = orjson.loads(line)
            assert isinstance(doc, dict)
            out.append(doc)
        return out

    async def frames(self, count: int) -> list[bytes]:
        """The next count protobuf frames (4-byte big-endian length, then the WatchEvent)."""
        out: list[bytes] = []
        while len(out) < count:
            if len(self.buffer) >= 4:
                (length,) = struct.unpack(">I", self.buffer[:4])
                if len(self.buffer) >= 4 + length:
                    out.append(self.buffer[4:4 + length])
                    self.buffer = self.buffer[4 + length:]
                    continue
            assert not self.ended, f"stream ended after {self.buffer!r}"
            await self._fill()
        return out

    async def end(self) -> bytes:
        """Everything left, once the server ends the stream."""
        while not self.ended:
            await self._fill()
        rest, self.buffer = self.buffer, b""
        return rest


@pytest.fixture(autouse=True)
def quick_disconnects(monkeypatch: pytest.MonkeyPatch) -> None:
    """Watches notice a vanished client within 50 ms rather than a second, so teardown does not wait."""
    monkeypatch.setattr(gateway.handlers.watch, "DISCONNECT_POLL", 0.05)


@pytest.fixture
def enablement() -> ApiEnablement:
    """The feature gates and group versions `server`'s core starts with: kube 1.28's defaults. A test parametrizes
    this fixture for others."""
    return apienablement.DEFAULT


@pytest.fixture(params=["inprocess", "grpc"])
async def server(request: pytest.FixtureRequest, tmp_path: Path,
                 enablement: ApiEnablement) -> AsyncIterator[Server]:
    # No default ServiceAccount per namespace (kube-controller-manager's part, as envtest leaves it out): these
    # tests count the store's revisions.
    store, core = await bootstrapped.started(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0,
                                                                             future_wait=0.5),
                                             security=INSECURE, namespace_controllers=False, api=enablement)
    client: CoreClient = (
        InProcessClient(core.guard) if request.param == "inprocess" else GrpcClient(f"127.0.0.1:{core.grpc_port}")
    )
    # As `capstan serve` (the core's collectors beside the gateway) and `capstan gateway --core` (asked for).
    objects = StorageObjectsCounter(core.core)
    app = (build_app(client, collectors=(webhook_metrics.REGISTRY, apimetrics.REGISTRY, objects.collector),
                     refresh=objects.refresh) if request.param == "inprocess"
           else build_app(client, core_metrics=True))
    runner, port = await start_http(app, "127.0.0.1", 0)
    session = aiohttp.ClientSession()
    try:
        yield Server(f"http://127.0.0.1:{port}", session, core, client, request.param)
    finally:
        await session.close()
        await runner.cleanup()
        await client.close()
        await core.stop()
        await store.close()
