"""The core's gRPC connection limits (server/service/grpc_server.py GrpcLimits), observed from real clients on
127.0.0.1 with small limits: a connection that never finishes its HTTP/2 handshake is closed after the
handshake timeout, calls past the per-connection stream cap wait until a stream ends, and an idle
connection is sent away (its channel goes idle and reconnects on the next call)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from server.service.grpc_server import GrpcLimits, RunningGrpc, start_grpc, stop_grpc

LIMITS = GrpcLimits(handshake_timeout=0.3, idle_timeout=0.5, max_streams_per_connection=2)


@pytest.fixture
async def core() -> AsyncIterator[RunningGrpc]:
    running = await start_grpc("127.0.0.1", 0, limits=LIMITS)
    try:
        yield running
    finally:
        await stop_grpc(running, grace=0)


@pytest.mark.parametrize("sent", [b"", b"PRI * HTTP/2.0\r\n"])
async def test_a_half_open_connection_is_closed_after_the_handshake_timeout(core: RunningGrpc, sent: bytes) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", core.port)
    writer.write(sent)
    start = time.monotonic()
    while await asyncio.wait_for(reader.read(4096), 5.0):
        pass
    assert 0.25 < time.monotonic() - start < 2.0
    writer.close()


async def test_calls_past_the_stream_cap_wait_for_a_stream_to_end(core: RunningGrpc) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{core.port}") as channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)
        watches = [stub.Watch(health_pb2.HealthCheckRequest()) for _ in range(2)]
        for watch in watches:
            assert (await watch.read()).status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.aio.AioRpcError) as waited:
            await stub.Check(health_pb2.HealthCheckRequest(), timeout=0.3)
        assert waited.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        watches[0].cancel()
        answer = await stub.Check(health_pb2.HealthCheckRequest(), timeout=5.0)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
        watches[1].cancel()


async def test_an_idle_connection_is_sent_away(core: RunningGrpc) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{core.port}") as channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)
        await stub.Check(health_pb2.HealthCheckRequest(), timeout=5.0)
        assert channel.get_state() == grpc.ChannelConnectivity.READY
        await asyncio.wait_for(channel.wait_for_state_change(grpc.ChannelConnectivity.READY), 3.0)
        assert channel.get_state() == grpc.ChannelConnectivity.IDLE
        await stub.Check(health_pb2.HealthCheckRequest(), timeout=5.0)  # and it reconnects
