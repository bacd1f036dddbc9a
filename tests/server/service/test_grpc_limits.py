"""Load shedding at the gRPC front (server/service/servicer.py over server/machinery/limits/): past a limit a call
fails with
RESOURCE_EXHAUSTED carrying kube's 429 Status, read calls and writes are counted apart, Watch is never
counted, and each call is in the flow of the credential it presents. Limits of 1 filled through the
limiter's own acquire: nothing is timed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import grpc
import orjson
import pytest

from capstan.core.v1 import core_service_pb2 as core_pb2
from capstan.core.v1 import core_service_pb2_grpc as core_pb2_grpc
from server.auth.config import INSECURE
from server.machinery.credentials import Credentials
from server.machinery.limits import flow, lane
from server.machinery.limits.config import Kind, Limits
from server.machinery.limits.limiter import Limiter
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.server.client import JSON, path, raw, status_of

TOO_MANY = {"status": "Failure", "message": "Too many requests, please try again later.",
            "reason": "TooManyRequests", "details": {"retryAfterSeconds": 1}, "code": 429, "metadata": {}}
ELSEWHERE = 0
Stub = core_pb2_grpc.CoreServiceStub


@pytest.fixture
async def limiter() -> Limiter:
    return Limiter(Limits(max_requests_inflight=1, max_mutating_requests_inflight=1, queue_length=0))


@pytest.fixture
async def running(tmp_path: Path, limiter: Limiter) -> AsyncIterator[RunningCore]:
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False,
                            limiter=limiter)
    try:
        yield core
    finally:
        await core.stop()
        await store.close()


@pytest.fixture
async def stub(running: RunningCore) -> AsyncIterator[Stub]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
        yield core_pb2_grpc.CoreServiceStub(channel)  # type: ignore[no-untyped-call]


CM = path("configmaps", "default")


def get(stub: Stub) -> object:
    return stub.Get(core_pb2.GetRequest(path=path("configmaps", "default", "a"), accept=JSON))


def list_(stub: Stub) -> object:
    return stub.List(core_pb2.ListRequest(path=CM, accept=JSON))


def discover(stub: Stub) -> object:
    return stub.Discover(core_pb2.DiscoverRequest())


def create(stub: Stub) -> object:
    return stub.Create(core_pb2.CreateRequest(path=CM, object=raw({"metadata": {"name": "a"}}), accept=JSON))


def delete(stub: Stub) -> object:
    return stub.Delete(core_pb2.DeleteRequest(path=path("configmaps", "default", "a"), accept=JSON))


@pytest.mark.parametrize("call,kind", [(get, Kind.READ_ONLY), (list_, Kind.READ_ONLY), (discover, Kind.READ_ONLY),
                                       (create, Kind.MUTATING), (delete, Kind.MUTATING)])
async def test_a_call_past_its_limit_is_resource_exhausted_with_kubes_429(
        stub: Stub, limiter: Limiter, call: object, kind: Kind) -> None:
    assert callable(call)
    other = Kind.MUTATING if kind is Kind.READ_ONLY else Kind.READ_ONLY
    await limiter.acquire(kind, ELSEWHERE)
    try:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call(stub)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert caught.value.details() == TOO_MANY["message"]
        assert status_of(caught.value) == TOO_MANY
        await limiter.acquire(other, ELSEWHERE)  # the other kind's slot is still free
        limiter.release(other)
    finally:
        limiter.release(kind)
    try:
        await call(stub)
    except grpc.aio.AioRpcError as err:
        assert err.code() != grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_writes_run_while_reads_are_at_their_limit(stub: Stub, limiter: Limiter) -> None:
    await limiter.acquire(Kind.READ_ONLY, ELSEWHERE)
    try:
        created = await stub.Create(core_pb2.CreateRequest(path=CM, object=raw({"metadata": {"name": "w"}}),
                                                           accept=JSON))
        assert orjson.loads(created.object.data)["metadata"]["name"] == "w"
    finally:
        limiter.release(Kind.READ_ONLY)


async def test_watch_is_never_counted(stub: Stub, limiter: Limiter) -> None:
    await limiter.acquire(Kind.READ_ONLY, ELSEWHERE)
    await limiter.acquire(Kind.MUTATING, ELSEWHERE)
    try:
        stream = stub.Watch(core_pb2.WatchRequest(path=path("namespaces"), accept=JSON,
                                                  options={"resourceVersion": "0"}))
        first = await stream.read()  # the initial ADDED events: the stream is open and serving
        assert isinstance(first, core_pb2.WatchResponse) and first.events
        stream.cancel()
    finally:
        limiter.release(Kind.READ_ONLY)
        limiter.release(Kind.MUTATING)


def bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


async def test_each_call_waits_in_the_flow_of_its_credential(tmp_path: Path) -> None:
    """Hands of one queue holding one call: a second call with the same token finds its queue full, a call
    with another token waits in its own queue, and both waiting calls run once the slot frees."""
    mine, theirs = flow.of(Credentials(token="mine")), flow.of(Credentials(token="theirs"))
    assert lane.hand(mine, 64, 1) != lane.hand(theirs, 64, 1)
    limiter = Limiter(Limits(max_requests_inflight=1, queues=64, hand_size=1, queue_length=1))
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False,
                            limiter=limiter)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{core.grpc_port}") as channel:
            stub = core_pb2_grpc.CoreServiceStub(channel)  # type: ignore[no-untyped-call]
            request = core_pb2.ListRequest(path=CM, accept=JSON)
            await limiter.acquire(Kind.READ_ONLY, ELSEWHERE)
            first = stub.List(request, metadata=bearer("mine"))
            await wait_until(lambda: limiter.states()[0].queued == 1)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.List(request, metadata=bearer("mine"))
            assert status_of(caught.value) == TOO_MANY
            other = stub.List(request, metadata=bearer("theirs"))
            await wait_until(lambda: limiter.states()[0].queued == 2)
            limiter.release(Kind.READ_ONLY)
            assert [len((await call).items) for call in (first, other)] == [0, 0]
            assert limiter.states()[0].rejected == {lane.QUEUE_FULL: 1}
    finally:
        await core.stop()
        await store.close()


def test_a_peer_address_is_one_flow_whatever_its_port() -> None:
    assert flow.of(Credentials(source_ip="ipv4:127.0.0.1:5000")) == flow.of(Credentials(source_ip="127.0.0.1"))
    assert flow.of(Credentials(source_ip="ipv6:[::1]:5000")) == flow.of(Credentials(source_ip="::1"))
    assert flow.of(Credentials(token="t", source_ip="::1")) != flow.of(Credentials(source_ip="::1"))


async def wait_until(condition: Callable[[], bool]) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.005)
    await asyncio.wait_for(poll(), 10)
