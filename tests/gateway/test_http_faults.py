"""Fault injection (gateway/faults.py) through a real gateway and core: the admin API, the kube-shaped answers a
rule gives the requests it matches, what it lets through, and watches ended on demand."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest

from capstan.cli.inprocess import InProcessClient
from capstan.core.v1 import core_service_pb2 as pb
from capstan.core.v1 import core_service_pb2_grpc
from gateway.app import build_app, start_http
from server.auth.config import INSECURE
from server.machinery.faults import Faults
from server.startup.app import start_core
from storage import StoreOptions
from storage.lmdb import LmdbStore
from tests.gateway.conftest import Server
from tests.server.client import status_of

FAULTS = "/debug/capstan/faults"
CM = "/api/v1/namespaces/default/configmaps"


async def _server(tmp_path: Path, *, enabled: bool) -> AsyncIterator[Server]:
    """As `capstan serve [--fault-injection]`: one Faults for the gateway and the core's gRPC port."""
    faults = Faults(enabled=enabled)
    store = await LmdbStore.open(tmp_path / "lmdb", StoreOptions(sync=False, compact_interval=0))
    core = await start_core(store, listen="127.0.0.1", grpc_port=0, security=INSECURE, namespace_controllers=False,
                            faults=faults)
    client = InProcessClient(core.guard)
    runner, port = await start_http(build_app(client, faults=faults), "127.0.0.1", 0)
    session = aiohttp.ClientSession()
    try:
        yield Server(f"http://127.0.0.1:{port}", session, core, client, "inprocess")
    finally:
        await session.close()
        await runner.cleanup()
        await client.close()
        await core.stop()
        await store.close()


@pytest.fixture
async def faulty(tmp_path: Path) -> AsyncIterator[Server]:
    async for server in _server(tmp_path, enabled=True):
        yield server


@pytest.fixture
async def plain(tmp_path: Path) -> AsyncIterator[Server]:
    async for server in _server(tmp_path, enabled=False):
        yield server


async def _rule(server: Server, **rule: Any) -> dict[str, Any]:
    resp = await server.request("POST", FAULTS, json=rule)
    assert resp.status == 201, resp.body
    return resp.json()


@pytest.mark.parametrize(("rule", "method", "path", "code", "status", "headers"), [
    ({"verb": "list", "resource": "configmaps", "code": 429, "retryAfterSeconds": 3}, "GET", CM, 429,
     {"reason": "TooManyRequests", "message": "Too many requests, please try again later.",
      "details": {"retryAfterSeconds": 3}}, {"Retry-After": "3"}),
    ({"verb": "get", "name": "a", "code": 500}, "GET", f"{CM}/a", 500,
     {"reason": "InternalError", "message": "Internal error occurred: injected fault",
      "details": {"name": "a", "kind": "configmaps"}}, {}),
    ({"verb": "update", "resource": "configmaps", "code": 409}, "PUT", f"{CM}/a", 409,
     {"reason": "Conflict", "message": 'Operation cannot be fulfilled on configmaps "a": the object has been'
      " modified; please apply your changes to the latest version and try again",
      "details": {"name": "a", "kind": "configmaps"}}, {}),
    ({"verb": "list", "code": 410}, "GET", f"{CM}?resourceVersion=7&resourceVersionMatch=NotOlderThan", 410,
     {"reason": "Expired", "message": "too old resource version: 7 (7)"}, {}),
    ({"verb": "create", "namespace": "default", "code": 504}, "POST", CM, 504,
     {"reason": "Timeout", "details": {},
      "message": "Timeout: request did not complete within requested timeout - context deadline exceeded"}, {}),
    ({"verb": "delete", "code": 503, "message": "go away"}, "DELETE", f"{CM}/a", 503,
     {"reason": "ServiceUnavailable", "message": "go away", "details": {"name": "a", "kind": "configmaps",
                                                                        "retryAfterSeconds": 1}},
     {"Retry-After": "1"}),
])
async def test_a_rule_answers_once_then_lets_requests_through(
        faulty: Server, rule: dict[str, Any], method: str, path: str, code: int, status: dict[str, Any],
        headers: dict[str, str]) -> None:
    await faulty.create(CM, {"metadata": {"name": "a"}})
    await _rule(faulty, **rule)
    body = {"metadata": {"name": "a" if method == "PUT" else "b"}} if method in ("PUT", "POST") else None
    refused = await faulty.request(method, path, json=body)
    assert refused.status == code
    assert {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": code,
            **status} == refused.json()
    assert {key: refused.headers.get(key) for key in headers} == headers
    served = await faulty.request(method, path, json=body)
    assert served.status in (200, 201), served.body
    listed = (await faulty.request("GET", FAULTS)).json()["rules"]
    assert [(r["code"], r["hits"], r["count"]) for r in listed] == [(code, 1, 1)]


@pytest.mark.parametrize(("match", "answered"), [
    ({}, [429, 429, 429]),
    ({"namespace": "other"}, [200, 200, 200]),
    ({"name": "a"}, [200, 429, 200]),
    ({"verb": "get", "resource": "configmaps"}, [200, 429, 429]),
    ({"verb": "*", "resource": "secrets"}, [200, 200, 200]),
    ({"resource": "configmaps", "subresource": "status"}, [200, 200, 200]),
])
async def test_what_a_rule_matches(faulty: Server, match: dict[str, str], answered: list[int]) -> None:
    for name in ("a", "b"):
        await faulty.create(CM, {"metadata": {"name": name}})
    await _rule(faulty, **match, code=429, count=0)  # 0: every matching request, until removed
    got = [(await faulty.request("GET", path)).status for path in (CM, f"{CM}/a", f"{CM}/b")]
    assert got == answered
    assert (await faulty.request("DELETE", FAULTS)).json() == {"removed": 1}
    assert [(await faulty.request("GET", path)).status for path in (CM, f"{CM}/a")] == [200, 200]


async def test_rules_answer_in_order_and_are_removed_one_by_one(faulty: Server) -> None:
    first = await _rule(faulty, verb="list", code=500, count=2)
    second = await _rule(faulty, verb="list", code=429)
    assert [(await faulty.request("GET", CM)).status for _ in range(4)] == [500, 500, 429, 200]
    await _rule(faulty, verb="list", code=504, count=0)
    assert (await faulty.request("DELETE", f"{FAULTS}/{first['id']}")).json() == {"removed": 1}
    assert (await faulty.request("DELETE", f"{FAULTS}/{first['id']}")).status == 404
    assert [r["id"] for r in (await faulty.request("GET", FAULTS)).json()["rules"]] == [second["id"], "3"]
    assert (await faulty.request("GET", CM)).status == 504


async def test_a_delayed_answer(faulty: Server) -> None:
    await _rule(faulty, verb="get", code=504, delaySeconds=0.3)
    started = time.perf_counter()
    assert (await faulty.request("GET", f"{CM}/a")).status == 504
    assert time.perf_counter() - started >= 0.3  # answered no sooner than asked (a bound, not a speed)


async def test_a_watch_told_410_gets_it_as_an_error_event(faulty: Server) -> None:
    await _rule(faulty, verb="watch", resource="configmaps", code=410)
    async with faulty.watch(f"{CM}?watch=1&resourceVersion=5&timeoutSeconds=5") as stream:
        assert stream.status == 200
        assert await stream.lines(1) == [{"type": "ERROR", "object": {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "too old resource version: 5 (5)", "reason": "Expired", "code": 410}}]
        assert await stream.end() == b""
    async with faulty.watch(f"{CM}?watch=1&timeoutSeconds=5") as stream:  # the rule is spent
        await faulty.create(CM, {"metadata": {"name": "a"}})
        assert [e["type"] for e in await stream.lines(1)] == ["ADDED"]


@pytest.mark.parametrize(("match", "dropped"), [
    ({}, [True, True]),
    ({"resource": "configmaps"}, [True, False]),
    ({"namespace": "kube-system"}, [False, False]),
])
async def test_dropping_open_watches(faulty: Server, match: dict[str, str], dropped: list[bool]) -> None:
    paths = [f"{CM}?watch=1&timeoutSeconds=5", "/api/v1/namespaces/default/secrets?watch=1&timeoutSeconds=5"]
    async with faulty.watch(paths[0]) as first, faulty.watch(paths[1]) as second:
        await faulty.create(CM, {"metadata": {"name": "a"}})
        await faulty.create("/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}})
        assert [e["type"] for s in (first, second) for e in await s.lines(1)] == ["ADDED", "ADDED"]
        answer = await faulty.request("POST", f"{FAULTS}/drop-watches", json=match)
        assert answer.json() == {"dropped": sum(dropped)}
        for stream, was_dropped in zip((first, second), dropped, strict=True):
            if was_dropped:
                assert await stream.end() == b""  # a clean end of the chunked answer, as at a watch's timeout
        await faulty.create(CM, {"metadata": {"name": "b"}})
        if not dropped[0]:
            assert [e["object"]["metadata"]["name"] for e in await first.lines(1)] == ["b"]


@pytest.mark.parametrize(("rule", "call", "code", "status"), [
    ({"verb": "list", "code": 429, "retryAfterSeconds": 2}, "List", grpc.StatusCode.RESOURCE_EXHAUSTED,
     {"reason": "TooManyRequests", "message": "Too many requests, please try again later.",
      "details": {"retryAfterSeconds": 2}}),
    ({"verb": "get", "name": "a", "code": 500}, "Get", grpc.StatusCode.INTERNAL,
     {"reason": "InternalError", "message": "Internal error occurred: injected fault",
      "details": {"name": "a", "group": "", "kind": "configmaps"}}),
    ({"verb": "watch", "code": 410}, "Watch", None,
     {"reason": "Expired", "message": "too old resource version: 0 (0)"}),
])
async def test_grpc_calls_meet_the_same_rules(faulty: Server, rule: dict[str, Any], call: str,
                                              code: grpc.StatusCode | None, status: dict[str, Any]) -> None:
    await faulty.create(CM, {"metadata": {"name": "a"}})
    await _rule(faulty, **rule)
    path = pb.ResourcePath(version="v1", resource="configmaps", namespace="default",
                           name="a" if call == "Get" else "")
    async with grpc.aio.insecure_channel(f"127.0.0.1:{faulty.core.grpc_port}") as channel:
        stub = core_service_pb2_grpc.CoreServiceStub(channel)  # type: ignore[no-untyped-call]

        async def once() -> None:
            if call == "Watch":
                async for _ in stub.Watch(pb.WatchRequest(path=path, options={"timeoutSeconds": 1})):
                    break
            elif call == "List":
                await stub.List(pb.ListRequest(path=path))
            else:
                await stub.Get(pb.GetRequest(path=path))

        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await once()
        if code is not None:
            assert refused.value.code() == code
        assert status_of(refused.value) == {"status": "Failure", "code": rule["code"], "metadata": {}, **status}
        await once()  # the rule is spent


@pytest.mark.parametrize(("body", "message"), [
    ({"verb": "get"}, "code: one of 400, 401, 403, 404, 409, 410, 429, 500, 503, 504"),
    ({"code": 418}, "code: one of 400, 401, 403, 404, 409, 410, 429, 500, 503, 504"),
    ({"code": 429, "count": -1}, "count: a number of requests, 0 for every one"),
    ({"code": 429, "delaySeconds": 301}, "delaySeconds: 0 to 300"),
    ({"code": 429, "resource": 5}, "resource: expected a string"),
    ({"code": 429, "verbs": ["get"]}, "unknown fields: verbs"),
])
async def test_rules_refused(faulty: Server, body: dict[str, Any], message: str) -> None:
    refused = await faulty.request("POST", FAULTS, json=body)
    assert (refused.status, refused.json()) == (400, {"message": message})
    assert (await faulty.request("GET", FAULTS)).json() == {"rules": []}


@pytest.mark.parametrize(("method", "path"), [("GET", FAULTS), ("POST", FAULTS), ("DELETE", FAULTS),
                                              ("POST", f"{FAULTS}/drop-watches")])
async def test_off_without_the_flag(plain: Server, method: str, path: str) -> None:
    answer = await plain.request(method, path, json={"code": 429})
    assert (answer.status, answer.json()) == (
        404, {"message": "fault injection is off: start the server with --fault-injection"})
    assert (await plain.request("GET", CM)).status == 200
