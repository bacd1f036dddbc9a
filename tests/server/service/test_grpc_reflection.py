"""Server reflection under both of its names: tools that speak only grpc.reflection.v1 (current grpcurl,
Postman, grpcui) and those that speak v1alpha get the same answers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2

from server.startup.app import RunningCore

Request = reflection_pb2.ServerReflectionRequest
Response = reflection_pb2.ServerReflectionResponse
VERSIONS = ["grpc.reflection.v1", "grpc.reflection.v1alpha"]


@pytest.fixture
async def channel(running: RunningCore) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as ch:
        yield ch


async def reflect(channel: grpc.aio.Channel, version: str, request: Request) -> Response:
    """One request on `version`'s stream; v1's messages are v1alpha's on the wire."""
    call = channel.stream_stream(f"/{version}.ServerReflection/ServerReflectionInfo",
                                 request_serializer=Request.SerializeToString,
                                 response_deserializer=Response.FromString)()
    await call.write(request)
    await call.done_writing()
    response = await call.read()
    call.cancel()
    assert isinstance(response, Response)
    return response


@pytest.mark.parametrize("version", VERSIONS)
async def test_reflection_lists_every_service(channel: grpc.aio.Channel, version: str) -> None:
    response = await reflect(channel, version, Request(list_services=""))
    services = {s.name for s in response.list_services_response.service}
    assert {"capstan.core.v1.CoreService", "grpc.health.v1.Health", *(v + ".ServerReflection" for v in VERSIONS)
            } <= services


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("symbol", ["capstan.core.v1.CoreService", "grpc.reflection.v1.ServerReflection",
                                    "grpc.reflection.v1alpha.ServerReflection"])
async def test_reflection_describes_each_service(channel: grpc.aio.Channel, version: str, symbol: str) -> None:
    response = await reflect(channel, version, Request(file_containing_symbol=symbol))
    files = [descriptor_pb2.FileDescriptorProto.FromString(raw)
             for raw in response.file_descriptor_response.file_descriptor_proto]
    package, name = symbol.rsplit(".", 1)
    (described,) = [f for f in files if f.package == package]
    assert name in {s.name for s in described.service}
