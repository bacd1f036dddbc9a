"""gRPC transport: the gateway as an ordinary client of a remote core (`capstan gateway --core ADDR`).

The Kubernetes Status rides in the rich error details; when there is none (the
core is unreachable, the call timed out) the gRPC code is turned into the
nearest Status, so the HTTP client still gets a Kubernetes answer.

A List tells the core what this channel receives (MAX_MESSAGE): a larger page comes back shorter, with a continue
token, which the whole-list paging (gateway/handlers/paging.py) follows like any other.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, TypeVar

import grpc
from google.rpc import status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from capstan.api.meta.v1 import meta_pb2
from gateway.client import CoreClient, CoreError, failure
from server.machinery import deadline, flowcontrol, healthlist, tracing
from server.machinery import grpcmetadata as metadata
from server.machinery.credentials import Credentials
from server.machinery.methods import METHODS, Method

T = TypeVar("T")

# gRPC codes that arrive without a Status (the core never answered) -> (HTTP code, reason).
_UNANSWERED = {
    grpc.StatusCode.UNAVAILABLE: (503, "ServiceUnavailable"),
    grpc.StatusCode.CANCELLED: (503, "ServiceUnavailable"),
    grpc.StatusCode.RESOURCE_EXHAUSTED: (429, "TooManyRequests"),
}

MAX_MESSAGE = 64 * 1024 * 1024  # a whole LIST page travels as one message
# The core's health checks in grpc.health.v1 are the "services" named with this prefix (server/service/grpc_server.py).
HEALTH_CHECK_PREFIX = "healthz/"
HEALTH_TIMEOUT = 5.0  # seconds: the core runs its store check within 2
_SERVING = health_pb2.HealthCheckResponse.SERVING


def status_of(err: grpc.aio.AioRpcError) -> meta_pb2.Status:
    """The Kubernetes Status in the error's rich details, or the nearest Status to its gRPC code."""
    for key, value in err.trailing_metadata() or ():
        if key == rpc_status.GRPC_DETAILS_METADATA_KEY and isinstance(value, bytes):
            for detail in status_pb2.Status.FromString(value).details:
                status = meta_pb2.Status()
                if detail.Unpack(status):
                    return status
    if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED:  # the request's deadline, sent as the call's: kube's 504
        status = failure(504, "Timeout",
                         "Timeout: request did not complete within requested timeout - context deadline exceeded")
        status.details.SetInParent()
        return status
    code, reason = _UNANSWERED.get(err.code(), (500, "InternalError"))
    return failure(code, reason, f"the core did not answer: {err.code().name}: {err.details()}")


class CoreUnreachable(CoreError):
    """The call failed UNAVAILABLE with no Status: the core did not answer (it is down, or the connection to it
    broke). Whether the core received the request is unknown; gateway/transport/pool.py decides what to retry."""


def _error(err: grpc.aio.AioRpcError) -> CoreError:
    status = status_of(err)
    if err.code() == grpc.StatusCode.UNAVAILABLE and not any(
            key == rpc_status.GRPC_DETAILS_METADATA_KEY for key, _ in err.trailing_metadata() or ()):
        return CoreUnreachable(status)
    return CoreError(status)


async def _call(awaitable: Awaitable[T]) -> T:
    try:
        return await awaitable
    except grpc.aio.AioRpcError as err:
        raise _error(err) from None


def _multicallables(channel: grpc.aio.Channel) -> dict[str, Any]:
    """One callable per CoreService method, by its name (what the generated stub builds, from the table)."""
    open_: Any = channel  # the stubs lack _registered_method
    return {method.name: (open_.unary_stream if method.streaming else open_.unary_unary)(
                method.path, request_serializer=method.request.SerializeToString,
                response_deserializer=method.response.FromString, _registered_method=True)
            for method in METHODS}


class GrpcClient(CoreClient):
    """The core over a gRPC channel: TLS with `credentials` (the split form's gateway presents its front-proxy
    client certificate), plaintext without. `as_caller` shares the channel and sends one request's credentials
    as metadata, marked as forwarded (server/machinery/grpcmetadata.py)."""

    def __init__(self, target: str, credentials: grpc.ChannelCredentials | None = None, *,
                 options: Sequence[tuple[str, Any]] = ()) -> None:
        options = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE),
                   *options]
        if credentials is None:
            self._channel = grpc.aio.insecure_channel(target, options=options)
        else:
            self._channel = grpc.aio.secure_channel(target, credentials, options=options)
        self._calls = _multicallables(self._channel)
        self._health: Any = health_pb2_grpc.HealthStub(self._channel)
        request, response = healthlist.messages()  # List by its path: not every grpcio-health-checking has it
        self._health_list = self._channel.unary_unary(
            healthlist.LIST_METHOD, request_serializer=request.SerializeToString,
            response_deserializer=response.FromString)
        self._metadata: tuple[tuple[str, str | bytes], ...] = ()

    def as_caller(self, credentials: Credentials) -> GrpcClient:
        view = object.__new__(GrpcClient)
        view._channel, view._calls, view._health = self._channel, self._calls, self._health
        view._health_list = self._health_list
        view._metadata = tuple(metadata.to_metadata(credentials, forwarded=True))
        return view

    async def unary(self, method: Method, request: Any) -> Any:
        """The call, with what remains of the request's deadline as its gRPC deadline (when one is bound); the
        core's API Priority and Fairness classification comes back in its trailing metadata. A List says how much
        this channel receives, and the core pages beyond it."""
        if method.name == "List":
            request.max_response_bytes = MAX_MESSAGE
        call = self._calls[method.name](request, metadata=_traced(self._metadata), timeout=deadline.remaining())
        try:
            response = await call
        except grpc.aio.AioRpcError as err:
            flowcontrol.note_metadata(err.trailing_metadata())
            raise _error(err) from None
        flowcontrol.note_metadata(await call.trailing_metadata())
        return response

    async def health(self) -> dict[str, bool]:
        listed = await _call(self._health_list(healthlist.messages()[0](), timeout=HEALTH_TIMEOUT))
        return {service.removeprefix(HEALTH_CHECK_PREFIX): answer.status == _SERVING
                for service, answer in listed.statuses.items() if service.startswith(HEALTH_CHECK_PREFIX)}

    async def connected(self, timeout: float) -> bool:
        """Whether the channel is connected now, or connects within `timeout` seconds. False means a call made
        now would not reach the core: nothing was sent to it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        state = self._channel.get_state(try_to_connect=True)
        while state != grpc.ChannelConnectivity.READY:
            if state in (grpc.ChannelConnectivity.TRANSIENT_FAILURE, grpc.ChannelConnectivity.SHUTDOWN):
                return False
            try:
                async with asyncio.timeout_at(deadline):
                    await self._channel.wait_for_state_change(state)
            except TimeoutError:
                return False
            state = self._channel.get_state(try_to_connect=True)
        return True

    async def serving(self, timeout: float) -> bool:
        """grpc.health.v1 Check of the whole server: SERVING within `timeout` seconds (waiting for the channel to
        reconnect meanwhile). A core shutting down answers NOT_SERVING before it stops."""
        try:
            answer = await self._health.Check(health_pb2.HealthCheckRequest(), timeout=timeout, wait_for_ready=True)
        except grpc.aio.AioRpcError:
            return False
        return bool(answer.status == _SERVING)

    async def stream(self, method: Method, request: Any) -> AsyncIterator[Any]:
        call = self._calls[method.name](request, metadata=_traced(self._metadata))
        try:
            flowcontrol.note_metadata(await call.initial_metadata())
            async for response in call:
                yield response
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.CANCELLED:
                return
            raise _error(err) from None
        finally:
            call.cancel()

    async def close(self) -> None:
        await self._channel.close()


def _traced(md: tuple[tuple[str, str | bytes], ...]) -> tuple[tuple[str, str | bytes], ...]:
    """The call's metadata with the current span's W3C traceparent when tracing (server/machinery/tracing.py)."""
    if not tracing.enabled():
        return md
    carrier: dict[str, str] = {}
    tracing.inject(carrier)
    return (*md, *carrier.items())
