"""Load shedding over REST (server/machinery/limits/ through gateway/limits.py): kube's 429 Status with Retry-After past
the in-flight limits, read-only and mutating counted apart, watches and probes exempt, fair queuing across
clients, and the counts on /metrics. Limits are 1 or 2 so a request held in flight — a real GET waiting for a
resourceVersion the store has not reached, or a slot taken through the limiter's own acquire — fills them;
nothing here is timed but the queue-wait test's 50 ms wait limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
import pytest

from capstan.cli.inprocess import InProcessClient
from gateway.app import PARKING_KEY, build_app, start_http
from gateway.client import CoreClient
from gateway.parking import ParkingLot
from gateway.transport.grpc import GrpcClient
from server.auth.config import INSECURE
from server.machinery.credentials import Credentials
from server.machinery.limits import flow, lane
from server.machinery.limits.config import Kind, Limits
from server.machinery.limits.limiter import Limiter
from server.startup.app import RunningCore, start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore

TIMEOUT = 10.0
CM = "/api/v1/namespaces/default/configmaps"
TOO_MANY = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Too many requests, please try again later.", "reason": "TooManyRequests",
            "details": {"retryAfterSeconds": 1}, "code": 429}
ELSEWHERE = 0  # the flow that takes slots directly (no HTTP client uses it)


@dataclass
class Limited:
    url: str
    session: aiohttp.ClientSession
    core: RunningCore
    limiter: Limiter
    lot: ParkingLot

    async def call(self, method: str, path: str, *, token: str = "", body: object = None
                   ) -> tuple[int, dict[str, str], bytes]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        data = orjson.dumps(body) if body is not None else None
        if data is not None:
            headers["Content-Type"] = "application/json"
        async with self.session.request(method, self.url + path, data=data, headers=headers) as resp:
            return resp.status, dict(resp.headers), await resp.read()

    def state(self, kind: Kind) -> lane.Lane:
        return self.limiter._lanes[kind]  # the counts the test waits on


async def until(condition: Callable[[], bool]) -> None:
    """Waits (yielding to the server) until `condition` holds: a state, not a time."""
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.005)
    await asyncio.wait_for(poll(), TIMEOUT)


@pytest.fixture(params=["inprocess", "grpc"])
async def make(request: pytest.FixtureRequest, tmp_path: Path
               ) -> AsyncIterator[Callable[[Limits], Awaitable[Limited]]]:
    """Starts a core and a gateway whose HTTP front has the limits asked."""
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0, future_wait=5.0))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False)
    client: CoreClient = (
        InProcessClient(core.guard) if request.param == "inprocess" else GrpcClient(f"127.0.0.1:{core.grpc_port}")
    )
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT))
    runners = []

    async def start(limits: Limits) -> Limited:
        limiter = Limiter(limits)
        app = build_app(client, limiter=limiter)
        runner, port = await start_http(app, "127.0.0.1", 0)
        runners.append(runner)
        return Limited(f"http://127.0.0.1:{port}", session, core, limiter, app[PARKING_KEY])

    try:
        yield start
    finally:
        await session.close()
        for runner in runners:
            await runner.cleanup()
        await client.close()
        await core.stop()
        await store.close()


def token_flow(token: str) -> int:
    return flow.of(Credentials(token=token))


async def test_a_real_request_in_flight_fills_the_read_only_limit_and_not_the_mutating_one(
        make: Callable[[Limits], Awaitable[Limited]]) -> None:
    server = await make(Limits(max_requests_inflight=1, max_mutating_requests_inflight=1, fair_queuing=False))
    ahead = server.core.core.context.store.current_revision() + 1
    slow = asyncio.create_task(server.call("GET", f"{CM}/held?resourceVersion={ahead}"))  # waits for `ahead`
    await until(lambda: server.state(Kind.READ_ONLY).executing == 1)

    status, headers, body = await server.call("GET", CM)
    assert (status, headers["Retry-After"], orjson.loads(body)) == (429, "1", TOO_MANY)
    assert headers["Content-Type"] == "application/json"

    # The mutating limit is apart: this create runs, and its revision releases the held GET.
    status, _, body = await server.call("POST", CM, body={"metadata": {"name": "held"}})
    assert status == 201, body
    status, _, body = await slow
    assert status == 200, body
    assert (await server.call("GET", CM))[0] == 200


@pytest.mark.parametrize("method,path,body", [
    ("POST", CM, {"metadata": {"name": "a"}}),
    ("PUT", f"{CM}/a", {"metadata": {"name": "a"}}),
    ("DELETE", f"{CM}/a", None),
    ("POST", "/api/v1/namespaces", {"metadata": {"name": "n"}}),
])
async def test_mutating_requests_past_their_limit_get_kubes_429(
        make: Callable[[Limits], Awaitable[Limited]], method: str, path: str, body: object) -> None:
    server = await make(Limits(max_requests_inflight=1, max_mutating_requests_inflight=1, fair_queuing=False))
    await server.limiter.acquire(Kind.MUTATING, ELSEWHERE)
    try:
        status, headers, answer = await server.call(method, path, body=body)
        assert (status, headers["Retry-After"], orjson.loads(answer)) == (429, "1", TOO_MANY)
        assert (await server.call("GET", CM))[0] == 200  # reads still run
    finally:
        server.limiter.release(Kind.MUTATING)
    assert (await server.call(method, path, body=body))[0] != 429


@pytest.mark.parametrize("path", [f"{CM}?watch=true", f"{CM}?watch=1&resourceVersion=0",
                                  "/api/v1/watch/namespaces/default/configmaps"])
async def test_watches_are_long_running_and_never_counted(
        make: Callable[[Limits], Awaitable[Limited]], path: str) -> None:
    server = await make(Limits(max_requests_inflight=1, fair_queuing=False))
    await server.limiter.acquire(Kind.READ_ONLY, ELSEWHERE)
    try:
        async with server.session.get(server.url + path) as watch:
            assert watch.status == 200
            await server.call("POST", CM, body={"metadata": {"name": "seen"}})
            event = orjson.loads(await asyncio.wait_for(watch.content.readline(), TIMEOUT))
            assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "seen")
            assert server.state(Kind.READ_ONLY).executing == 1
    finally:
        server.limiter.release(Kind.READ_ONLY)


@pytest.mark.parametrize("path", ["/readyz", "/livez", "/healthz", "/readyz/etcd"])
async def test_health_probes_are_exempt(make: Callable[[Limits], Awaitable[Limited]], path: str) -> None:
    server = await make(Limits(max_requests_inflight=1, fair_queuing=False))
    await server.limiter.acquire(Kind.READ_ONLY, ELSEWHERE)
    try:
        assert (await server.call("GET", path))[0] == 200
        assert (await server.call("GET", "/version"))[0] == 429  # other non-resource reads are counted
    finally:
        server.limiter.release(Kind.READ_ONLY)


async def test_a_queued_request_waits_its_turn_then_runs(make: Callable[[Limits], Awaitable[Limited]]) -> None:
    server = await make(Limits(max_requests_inflight=1))
    await server.limiter.acquire(Kind.READ_ONLY, ELSEWHERE)
    waiting = asyncio.create_task(server.call("GET", CM, token="a"))
    await until(lambda: server.state(Kind.READ_ONLY).queued == 1)
    server.limiter.release(Kind.READ_ONLY)
    assert (await waiting)[0] == 200
    assert (server.state(Kind.READ_ONLY).executing, server.state(Kind.READ_ONLY).queued) == (0, 0)


async def test_a_request_that_waits_past_the_wait_limit_gets_429(
        make: Callable[[Limits], Awaitable[Limited]]) -> None:
    server = await make(Limits(max_requests_inflight=1, queue_wait=0.05))
    await server.limiter.acquire(Kind.READ_ONLY, ELSEWHERE)
    try:
        status, headers, body = await server.call("GET", CM)
        assert (status, headers["Retry-After"], orjson.loads(body)) == (429, "1", TOO_MANY)
        assert server.state(Kind.READ_ONLY).rejected == {lane.TIME_OUT: 1}
        assert server.state(Kind.READ_ONLY).queued == 0
    finally:
        server.limiter.release(Kind.READ_ONLY)


QUEUES, HAND, LENGTH = 16, 2, 5
NOISY, QUIET = "noisy-client", "quiet-client"


async def test_a_flooding_client_is_refused_and_queued_while_another_still_gets_through(
        make: Callable[[Limits], Awaitable[Limited]]) -> None:
    noisy_hand = lane.hand(token_flow(NOISY), QUEUES, HAND)
    assert not set(noisy_hand) & set(lane.hand(token_flow(QUIET), QUEUES, HAND)), "pick tokens dealt apart"
    server = await make(Limits(max_requests_inflight=1, queues=QUEUES, hand_size=HAND, queue_length=LENGTH))
    await server.limiter.acquire(Kind.READ_ONLY, ELSEWHERE)
    finished: list[str] = []

    async def get(token: str) -> int:
        status = (await server.call("GET", CM, token=token))[0]
        finished.append(token)
        return status

    flood = [asyncio.create_task(get(NOISY)) for _ in range(HAND * LENGTH)]
    await until(lambda: server.state(Kind.READ_ONLY).queued == HAND * LENGTH)
    refused = await asyncio.gather(*(get(NOISY) for _ in range(3)))  # its hand's queues are full
    assert refused == [429] * 3
    assert server.state(Kind.READ_ONLY).rejected == {lane.QUEUE_FULL: 3}

    quiet = asyncio.create_task(get(QUIET))  # another queue: it waits, but behind no flood
    await until(lambda: server.state(Kind.READ_ONLY).queued == HAND * LENGTH + 1)
    server.limiter.release(Kind.READ_ONLY)
    assert await quiet == 200
    assert await asyncio.gather(*flood) == [200] * (HAND * LENGTH)
    # Served one at a time, queues taking turns: the quiet client within the first round, not after the flood.
    # (A slot is freed when a handler returns, before its answer is written: completions may swap by one.)
    assert finished.index(QUIET) - 3 <= HAND + 1, finished


async def test_a_flooding_clients_connections_are_parked_until_its_queue_drains(
        make: Callable[[Limits], Awaitable[Limited]]) -> None:
    """Once a flow has a queue's worth waiting, its answered connections stop being read: the next request
    waits in the socket, unparsed, and is read when the flow's waiting falls below it; another client's
    connection is never parked."""
    server = await make(Limits(max_requests_inflight=1, queues=QUEUES, hand_size=HAND, queue_length=LENGTH))
    await server.limiter.acquire(Kind.READ_ONLY, ELSEWHERE)
    flood = [asyncio.create_task(server.call("GET", CM, token=NOISY)) for _ in range(HAND * LENGTH)]
    await until(lambda: server.state(Kind.READ_ONLY).queued == HAND * LENGTH)
    quiet = asyncio.create_task(server.call("GET", CM, token=QUIET))
    await until(lambda: server.state(Kind.READ_ONLY).queued == HAND * LENGTH + 1)
    headers = {"Authorization": f"Bearer {NOISY}"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1)) as one_connection:
        async with one_connection.get(server.url + CM, headers=headers) as resp:
            assert resp.status == 429  # its hand's queues are full: refused, answered, parked
        assert (server.lot.parked, server.lot.parks) == (1, 1)
        again = asyncio.create_task(one_connection.get(server.url + CM, headers=headers))
        await asyncio.sleep(0.2)
        assert server.state(Kind.READ_ONLY).rejected == {lane.QUEUE_FULL: 1}  # not read, so not refused
        assert not again.done()
        server.limiter.release(Kind.READ_ONLY)
        async with await asyncio.wait_for(again, TIMEOUT) as resp:  # read once the flood's queue drained
            assert resp.status == 200
    assert (await quiet)[0] == 200
    assert [answer[0] for answer in await asyncio.gather(*flood)] == [200] * (HAND * LENGTH)
    assert server.lot.parked == 0


async def test_without_fair_queuing_a_request_over_the_limit_is_refused_at_once(
        make: Callable[[Limits], Awaitable[Limited]]) -> None:
    server = await make(Limits(max_requests_inflight=1, fair_queuing=False))
    await server.limiter.acquire(Kind.READ_ONLY, ELSEWHERE)
    try:
        assert (await server.call("GET", CM))[0] == 429
        assert server.state(Kind.READ_ONLY).rejected == {lane.CONCURRENCY_LIMIT: 1}
    finally:
        server.limiter.release(Kind.READ_ONLY)


async def test_metrics_show_in_flight_queued_and_refused_requests(
        make: Callable[[Limits], Awaitable[Limited]]) -> None:
    server = await make(Limits(max_requests_inflight=2, max_mutating_requests_inflight=1, queues=1, hand_size=1,
                               queue_length=1))
    await server.limiter.acquire(Kind.MUTATING, ELSEWHERE)
    queued = asyncio.create_task(server.call("POST", CM, body={"metadata": {"name": "q"}}))
    await until(lambda: server.state(Kind.MUTATING).queued == 1)
    assert (await server.call("POST", CM, body={"metadata": {"name": "r"}}))[0] == 429  # the queue is full
    await server.limiter.acquire(Kind.READ_ONLY, ELSEWHERE)  # /metrics itself takes the second read-only slot
    try:
        status, _, body = await server.call("GET", "/metrics")
    finally:
        server.limiter.release(Kind.READ_ONLY)
        server.limiter.release(Kind.MUTATING)
    assert status == 200
    assert (await queued)[0] == 201
    lines = body.decode().splitlines()
    for line in ['apiserver_current_inflight_requests{request_kind="readOnly"} 2.0',
                 'apiserver_current_inflight_requests{request_kind="mutating"} 1.0',
                 'apiserver_flowcontrol_current_executing_requests{flow_schema="per-client",'
                 'priority_level="readOnly"} 2.0',
                 'apiserver_flowcontrol_current_inqueue_requests{flow_schema="per-client",'
                 'priority_level="mutating"} 1.0',
                 'apiserver_flowcontrol_current_inqueue_requests{flow_schema="per-client",'
                 'priority_level="readOnly"} 0.0',
                 'apiserver_flowcontrol_rejected_requests_total{flow_schema="per-client",'
                 'priority_level="mutating",reason="queue-full"} 1.0',
                 "capstan_parked_connections 0.0",
                 "capstan_connections_parked_total 1.0",  # the refused POST's connection, read again since
                 'apiserver_dropped_requests_total{request_kind="mutating"} 1.0',
                 'apiserver_dropped_requests_total{request_kind="readOnly"} 0.0']:
        assert line in lines, body.decode()
    refused = [line for line in lines if line.startswith("apiserver_request_total{") and 'code="429"' in line]
    assert len(refused) == 1 and 'verb="POST"' in refused[0] and refused[0].endswith(" 1.0"), refused
