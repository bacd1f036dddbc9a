"""gRPC transport: the gateway as an ordinary client of a remote core (`capstan gateway --core ADDR`).

The Kubernetes Status rides in the rich error details; when there is none (the
core is unreachable, the call timed out) the gRPC code is turned into the
nearest Status, so the HTTP client still gets a Kubernetes answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import grpc
from google.rpc import status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_pb2, core_pb2_grpc
from gateway.client import CoreError, failure

T = TypeVar("T")

# gRPC codes that arrive without a Status (the core never answered) -> (HTTP code, reason).
_UNANSWERED = {
    grpc.StatusCode.UNAVAILABLE: (503, "ServiceUnavailable"),
    grpc.StatusCode.DEADLINE_EXCEEDED: (504, "Timeout"),
    grpc.StatusCode.CANCELLED: (503, "ServiceUnavailable"),
    grpc.StatusCode.RESOURCE_EXHAUSTED: (429, "TooManyRequests"),
}

MAX_MESSAGE = 64 * 1024 * 1024  # a whole LIST page travels as one message
# The core's health checks in grpc.health.v1 are the "services" named with this prefix (server/grpc_server.py).
HEALTH_CHECK_PREFIX = "healthz/"
HEALTH_TIMEOUT = 5.0  # seconds: the core runs its store check within 2
_SERVING = health_pb2.HealthCheckResponse.SERVING
_LISTING: Any = health_pb2  # its List messages are missing from the type stubs


def status_of(err: grpc.aio.AioRpcError) -> meta_pb2.Status:
    """The Kubernetes Status in the error's rich details, or the nearest Status to its gRPC code."""
    for key, value in err.trailing_metadata() or ():
        if key == rpc_status.GRPC_DETAILS_METADATA_KEY and isinstance(value, bytes):
            for detail in status_pb2.Status.FromString(value).details:
                status = meta_pb2.Status()
                if detail.Unpack(status):
                    return status
    code, reason = _UNANSWERED.get(err.code(), (500, "InternalError"))
    return failure(code, reason, f"the core did not answer: {err.code().name}: {err.details()}")


async def _call(awaitable: Awaitable[T]) -> T:
    try:
        return await awaitable
    except grpc.aio.AioRpcError as err:
        raise CoreError(status_of(err)) from None


class GrpcClient:
    def __init__(self, target: str) -> None:
        self._channel = grpc.aio.insecure_channel(
            target,
            options=[("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)],
        )
        self._stub: Any = core_pb2_grpc.CoreServiceStub(self._channel)  # type: ignore[no-untyped-call]
        self._health: Any = health_pb2_grpc.HealthStub(self._channel)

    async def create(self, request: core_pb2.CreateRequest) -> core_pb2.CreateResponse:
        return await _call(self._stub.Create(request))

    async def get(self, request: core_pb2.GetRequest) -> core_pb2.GetResponse:
        return await _call(self._stub.Get(request))

    async def list(self, request: core_pb2.ListRequest) -> core_pb2.ListResponse:
        return await _call(self._stub.List(request))

    async def update(self, request: core_pb2.UpdateRequest) -> core_pb2.UpdateResponse:
        return await _call(self._stub.Update(request))

    async def patch(self, request: core_pb2.PatchRequest) -> core_pb2.PatchResponse:
        return await _call(self._stub.Patch(request))

    async def delete(self, request: core_pb2.DeleteRequest) -> core_pb2.DeleteResponse:
        return await _call(self._stub.Delete(request))

    async def delete_collection(
        self, request: core_pb2.DeleteCollectionRequest
    ) -> core_pb2.DeleteCollectionResponse:
        return await _call(self._stub.DeleteCollection(request))

    async def discover(self, request: core_pb2.DiscoverRequest) -> core_pb2.DiscoverResponse:
        return await _call(self._stub.Discover(request))

    async def health(self) -> dict[str, bool]:
        listed = await _call(self._health.List(_LISTING.HealthListRequest(), timeout=HEALTH_TIMEOUT))
        return {service.removeprefix(HEALTH_CHECK_PREFIX): answer.status == _SERVING
                for service, answer in listed.statuses.items() if service.startswith(HEALTH_CHECK_PREFIX)}

    async def watch(self, request: core_pb2.WatchRequest) -> AsyncIterator[core_pb2.WatchResponse]:
        call = self._stub.Watch(request)
        try:
            async for response in call:
                yield response
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.CANCELLED:
                return
            raise CoreError(status_of(err)) from None
        finally:
            call.cancel()

    async def close(self) -> None:
        await self._channel.close()
