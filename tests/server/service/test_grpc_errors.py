"""The gRPC face of the core: one gRPC code per Kubernetes Status, the full Status in the rich error
details, and the standard reflection and health services beside CoreService."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.startup.app import RunningCore
from tests.server.client import Client, path, refused, status_of

CM = path("configmaps", "default")
A = path("configmaps", "default", "a")

Trigger = Callable[[Client], Awaitable[object]]


async def bad_request(client: Client) -> object:
    await client.create(CM, {"metadata": {"name": "a"}})
    return await client.update(A, {"metadata": {"name": "b"}})


async def forbidden(client: Client) -> object:
    await client.create(path("namespaces"), {"metadata": {"name": "closing"}})
    await client.create(path("configmaps", "closing"), {"metadata": {"name": "held", "finalizers": ["example.com/x"]}})
    await client.delete(path("namespaces", name="closing"))
    return await client.create(path("configmaps", "closing"), {"metadata": {"name": "late"}})


async def already_exists(client: Client) -> object:
    await client.create(CM, {"metadata": {"name": "a"}})
    return await client.create(CM, {"metadata": {"name": "a"}})


async def conflict(client: Client) -> object:
    created = await client.create(CM, {"metadata": {"name": "a"}})
    await client.update(A, {"metadata": {"name": "a"}, "data": {"k": "v"}})
    return await client.update(A, created)


async def expired(client: Client) -> object:
    created = await client.create(CM, {"metadata": {"name": "a"}})
    await client.create(CM, {"metadata": {"name": "b"}})
    await client.running.core.context.store.compact(client.revision())
    return await client.list(CM, resourceVersion=created["metadata"]["resourceVersion"], resourceVersionMatch="Exact")


async def future(client: Client) -> object:
    return await client.get(path("namespaces", name="default"), resourceVersion=str(client.revision() + 100))


async def watch_unknown_resource(client: Client) -> object:
    async for event in client.watch(path("widgets")):
        return event
    return None


# What the Status code becomes on the wire (server/machinery/errors.py's table): the nearest gRPC meaning.
MAPPING: list[tuple[str, Trigger, int, grpc.StatusCode]] = [
    ("400 BadRequest", bad_request, 400, grpc.StatusCode.INVALID_ARGUMENT),
    ("403 Forbidden", forbidden, 403, grpc.StatusCode.PERMISSION_DENIED),
    ("404 NotFound", lambda c: c.get(path("configmaps", "default", "missing")), 404, grpc.StatusCode.NOT_FOUND),
    ("404 unknown resource", lambda c: c.list(path("widgets")), 404, grpc.StatusCode.NOT_FOUND),
    ("404 on a watch", watch_unknown_resource, 404, grpc.StatusCode.NOT_FOUND),
    ("405 MethodNotAllowed", lambda c: c.delete_collection(path("namespaces")), 405, grpc.StatusCode.UNIMPLEMENTED),
    ("409 AlreadyExists", already_exists, 409, grpc.StatusCode.ALREADY_EXISTS),
    ("409 Conflict", conflict, 409, grpc.StatusCode.ABORTED),
    ("410 Expired", expired, 410, grpc.StatusCode.OUT_OF_RANGE),
    ("422 Invalid", lambda c: c.create(CM, {"metadata": {"name": "Bad"}}), 422, grpc.StatusCode.INVALID_ARGUMENT),
    (
        "500 InternalError",
        lambda c: c.create(CM, {"metadata": {"name": "a", "resourceVersion": "5"}}),
        500,
        grpc.StatusCode.INTERNAL,
    ),
    ("504 Timeout", future, 504, grpc.StatusCode.DEADLINE_EXCEEDED),
]


@pytest.mark.parametrize(("trigger", "http", "code"), [m[1:] for m in MAPPING], ids=[m[0] for m in MAPPING])
async def test_each_status_maps_to_one_grpc_code_and_travels_whole(
    client: Client, trigger: Trigger, http: int, code: grpc.StatusCode
) -> None:
    failed = await refused(trigger(client))
    assert (failed.grpc_code, failed.status["code"]) == (code, http)
    assert failed.status["status"] == "Failure"
    assert failed.status["message"]
    assert failed.grpc_message == failed.status["message"]


@pytest.mark.parametrize("method", ["Get", "Create", "Watch"])
async def test_bytes_that_are_no_request_get_a_400_status(running: RunningCore, method: str) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
        target = f"/capstan.core.v1.CoreService/{method}"
        stream: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = channel.unary_stream(target)
        unary: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(target)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            if method == "Watch":
                await stream(b"\xff\xff\xff", timeout=5).read()
            else:
                await unary(b"\xff\xff\xff", timeout=5)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = status_of(caught.value)
    assert (status["code"], status["reason"]) == (400, "BadRequest")
    assert status["message"].startswith(f"the request is not a capstan.core.v1.{method}Request: ")


# ---------------------------------------------------------------- reflection, health, discovery


@pytest.fixture
async def channel(running: RunningCore) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as ch:
        yield ch


async def reflect(
    channel: grpc.aio.Channel, request: reflection_pb2.ServerReflectionRequest
) -> reflection_pb2.ServerReflectionResponse:
    stub: Any = reflection_pb2_grpc.ServerReflectionStub(channel)  # type: ignore[arg-type]
    call = stub.ServerReflectionInfo()
    await call.write(request)
    await call.done_writing()
    response: reflection_pb2.ServerReflectionResponse = await call.read()
    call.cancel()
    return response


async def test_reflection_lists_the_core_service(channel: grpc.aio.Channel) -> None:
    response = await reflect(channel, reflection_pb2.ServerReflectionRequest(list_services=""))
    services = {s.name for s in response.list_services_response.service}
    assert {"capstan.core.v1.CoreService", "grpc.health.v1.Health"} <= services


async def test_reflection_describes_the_core_service(channel: grpc.aio.Channel) -> None:
    request = reflection_pb2.ServerReflectionRequest(file_containing_symbol="capstan.core.v1.CoreService")
    response = await reflect(channel, request)
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in response.file_descriptor_response.file_descriptor_proto
    ]
    core = next(f for f in files if f.package == "capstan.core.v1")
    (service,) = [s for s in core.service if s.name == "CoreService"]
    assert {m.name for m in service.method} == {
        "Create",
        "Get",
        "List",
        "Update",
        "Patch",
        "Delete",
        "DeleteCollection",
        "Watch",
        "Discover",
        "RegisterDescriptors",
        "Access",
        "IssuerDocument",
        "Proxy",
        "Metrics",
    }


@pytest.mark.parametrize("service", ["", "capstan.core.v1.CoreService"])
async def test_health_answers_serving(channel: grpc.aio.Channel, service: str) -> None:
    stub: Any = health_pb2_grpc.HealthStub(channel)
    reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_health_does_not_know_other_services(channel: grpc.aio.Channel) -> None:
    stub: Any = health_pb2_grpc.HealthStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=5)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_discover_describes_the_built_in_resources(client: Client) -> None:
    response: core_pb2.DiscoverResponse = await client.call(client.stub.Discover, core_pb2.DiscoverRequest())
    by_name = {r.resource: r for r in response.resources}
    assert {"configmaps", "secrets", "namespaces"} <= set(by_name)
    cm, ns = by_name["configmaps"], by_name["namespaces"]
    assert (cm.kind, cm.version, cm.namespaced, cm.proto_message) == (
        "ConfigMap",
        "v1",
        True,
        "k8s.io.api.core.v1.ConfigMap",
    )
    assert "deletecollection" in cm.verbs and "deletecollection" not in ns.verbs
    assert not ns.namespaced
    assert {s.name for s in ns.subresources} == {"status", "finalize"}
