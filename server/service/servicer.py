"""The CoreService over gRPC: a thin adapter from grpc.aio to the guarded core (server/auth/guard.py), each
call with the credentials its metadata and TLS peer present (server/machinery/grpcmetadata.py).

An ApiError becomes a gRPC status whose details carry the Kubernetes Status
(server/machinery/errors.py); anything unexpected becomes a 500 Status, never a traceback
on the wire.

A List answers at most what its client can receive (ListRequest.max_response_bytes, gRPC's default 4 MiB when
unset), paged with a continue token beyond it, so a client with default settings never gets RESOURCE_EXHAUSTED.

Load shedding (server/machinery/limits/) is the first thing a call meets, before its bytes are parsed: Watch is
long-running and exempt, the read calls (the method table's read_only) count as read-only, every other call
as mutating, each call in the flow of the credential it presents — a split gateway's forwarded call in its
client's flow. The split form
counts a REST request once in the gateway's process and once in the core's, each against its own process's
limits; `capstan serve` shares one Limiter between its HTTP and gRPC fronts, and its in-process gateway
never passes here.

Fault injection (server/machinery/faults.py, only with --fault-injection): in `capstan serve` the rules its
gateway holds answer the resource calls (Create ... Watch) after parsing and before the guard, with the rule's
Status as any refusal is answered, so gRPC clients meet the same failures as REST ones.

With request metrics (server/machinery/apimetrics.py), every call is counted in apiserver_request_total and
timed in apiserver_request_duration_seconds as the REST request it corresponds to: the verb as kube's metrics
name it (Create is POST, List LIST, Watch WATCH, timed for as long as it stays open), the path's group,
version, resource, subresource and scope, and the Kubernetes Status code the call ended with (200, 201 for a
Create, the ApiError's code, 500 for anything unexpected). A call refused by load shedding is counted 429.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message
from grpc_status import rpc_status

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.auth.guard import GuardedCore
from server.machinery import apimetrics, deadline, errors, flowcontrol, tracing, wiretext
from server.machinery import grpcmetadata as metadata
from server.machinery.credentials import Credentials
from server.machinery.faults import Faults
from server.machinery.fields.managers import manager_from_user_agent
from server.machinery.limits import flow
from server.machinery.limits.config import Kind
from server.machinery.limits.limiter import Limiter
from server.machinery.methods import METHODS, SERVICE, Method
from server.objects import body, render

log = logging.getLogger(__name__)

Ctx = grpc.aio.ServicerContext[Any, Any]
# gRPC's default max receive message length: an unset ListRequest.max_response_bytes means a client with
# default settings, whose List answers are paged to fit (server/objects/list.py).
DEFAULT_MAX_RECEIVE = 4 * 1024 * 1024


def _default_manager(options: Any, context: Ctx) -> None:
    """A write that names no field manager is recorded under the caller's user-agent, as over REST."""
    if not options.HasField("fieldManager"):
        agent = dict(context.invocation_metadata() or ()).get("user-agent", "")
        options.fieldManager = manager_from_user_agent(str(agent))


class CoreService:
    """Every call goes through the guard with the credentials its metadata and TLS peer present; which calls
    there are, and what each is, is the method table's (server/machinery/methods.py)."""

    def __init__(self, guard: GuardedCore, is_proxy: Callable[[bytes], bool], faults: Faults | None = None,
                 metrics: apimetrics.RequestMetrics | None = None) -> None:
        self._guard = guard
        self._is_proxy = is_proxy
        self._faults = faults or Faults()
        self.metrics = metrics

    async def _injected(self, method: Method, request: Any) -> None:
        """Raises the ApiError of the fault rule that answers this call, if one does."""
        if method.name not in _FAULTABLE:
            return
        path = request.path
        target = _Target(method.verb, path.group, path.resource, path.subresource, path.namespace, path.name)
        rule = self._faults.take(target)
        if rule is None:
            return
        if rule.delay_seconds:
            await asyncio.sleep(rule.delay_seconds)
        options = getattr(request, "options", None)
        raise errors.ApiError(rule.status(target, getattr(options, "resourceVersion", "")))

    def credentials(self, context: Ctx) -> Credentials:
        pems = list(context.auth_context().get("x509_pem_cert") or ())
        peer = metadata.pem_to_der(pems[0]) if pems else b""
        md: Any = context.invocation_metadata() or ()
        agent = next((str(v) for k, v in md if k == "user-agent"), "")
        return metadata.from_call(md, peer, agent, context.peer(), self._is_proxy)

    async def traced_unary(self, method: Method, request: Any, context: Ctx) -> Message:
        """unary in a server span continuing the caller's trace (a core that traces registers these)."""
        with tracing.span(method.path.lstrip("/"), server=True, parent=_parent(context)):
            return await self.unary(method, request, context)

    async def traced_stream(self, method: Method, request: Any, context: Ctx) -> AsyncIterator[Message]:
        with tracing.span(method.path.lstrip("/"), server=True, parent=_parent(context)):
            async for response in self.stream(method, request, context):
                yield response

    async def unary(self, method: Method, request: Any, context: Ctx) -> Message:
        applying = isinstance(request, core_pb2.PatchRequest) and request.type == core_pb2.PATCH_TYPE_APPLY
        if method.field_manager and not applying:  # an apply must name its manager
            _default_manager(getattr(request, method.field_manager), context)
        credentials = self.credentials(context)
        classified = flowcontrol.begin()  # the call's APF classification, sent back as trailing metadata
        started = time.perf_counter()
        code = 500
        try:
            # A body given as JSON text is read as bytes before anything else sees it (audit, admission), and
            # refused, like a request that is no message (_parse), before authentication when malformed.
            body.from_text(request)
            if self._faults.active:
                await self._injected(method, request)
            if isinstance(request, core_pb2.ListRequest) and not request.max_response_bytes:
                request.max_response_bytes = DEFAULT_MAX_RECEIVE  # what a client with default settings takes
            with deadline.within(context.time_remaining()):  # the call's gRPC deadline, where it has one
                answer: Message = await self._guard.unary(method, request, credentials)
            context.set_trailing_metadata(classified.metadata())
            code = 201 if method.name == "Create" else 200
            return render.as_text(answer) if getattr(request, "accept", None) == render.JSON_TEXT else answer
        except errors.ApiError as err:
            code = err.status.code
            await _abort(context, err, classified)
        except Exception as err:
            log.exception("request failed")
            await _abort(context, errors.internal(str(err)), classified)
        finally:
            if self.metrics is not None:
                self.metrics.observe(_labels(method, request), code, time.perf_counter() - started)
        raise AssertionError("unreachable: abort raises")

    async def stream(self, method: Method, request: Any, context: Ctx) -> AsyncIterator[Message]:
        classified = flowcontrol.begin()  # the call's APF classification, sent as initial metadata
        started = time.perf_counter()
        code = 200  # a watch the client closes ended well
        try:
            if self._faults.active:
                await self._injected(method, request)
            stream = await self._guard.stream(method, request, self.credentials(context))
            await context.send_initial_metadata(classified.metadata())
            text = getattr(request, "accept", None) == render.JSON_TEXT
            async for response in stream:
                yield render.as_text(response) if text else response
        except errors.ApiError as err:
            code = err.status.code
            await _abort(context, err, classified)
        except Exception as err:  # the wire gets a Status, the log gets the traceback
            code = 500
            log.exception("watch failed")
            await _abort(context, errors.internal(str(err)), classified)
        finally:
            if self.metrics is not None:
                self.metrics.observe(_labels(method, request), code, time.perf_counter() - started)


def _parent(context: Ctx) -> dict[str, str]:
    """The caller's W3C trace headers, from the call's metadata."""
    return tracing.headers_of(context.invocation_metadata() or ())


def _labels(method: Method, request: Any) -> tuple[str, str, str, str, str, str, str]:
    asked = method.authorization(request)
    return apimetrics.request_labels(asked.verb, asked.api_group, asked.api_version, asked.resource,
                                     asked.subresource, asked.namespace, asked.name)


# The calls that name a resource by a ResourcePath, as the gateway's resource requests do.
_FAULTABLE = frozenset({"Create", "Get", "List", "Update", "Patch", "Delete", "DeleteCollection", "Watch"})


@dataclass(frozen=True, slots=True)
class _Target:
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str
    name: str


async def _abort(context: Ctx, err: errors.ApiError, classified: flowcontrol.Classified | None = None) -> None:
    status = rpc_status.to_status(errors.to_grpc_status(err))
    extra = classified.metadata() if classified is not None else ()
    await context.abort(status.code, status.details, (*status.trailing_metadata, *extra))


Handler = Callable[[Any, Ctx], Any]


def register(guard: GuardedCore, is_proxy: Callable[[bytes], bool], *, limiter: Limiter | None = None,
             faults: Faults | None = None,
             metrics: apimetrics.RequestMetrics | None = None) -> Callable[[grpc.aio.Server], list[str]]:
    """A registrar for server.service.grpc_server.start_grpc; `limiter` sheds load (kube's defaults when None);
    `faults`: the fault injection rules the calls meet (None: none); `metrics` counts the calls (none when None).

    The handlers take and give bytes, parsing and serializing the messages themselves, so bytes that are
    no request get a Kubernetes Status (grpc.aio's own deserializer answers a bare INTERNAL), and grpc's
    (de)serializer hooks are skipped (15-20 µs a call on a bare server). On the wire it is the same service.
    """

    def add(server: grpc.aio.Server) -> list[str]:
        servicer = CoreService(guard, is_proxy, faults, metrics)
        shedding = limiter or Limiter()
        handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
        traced = tracing.enabled()  # configured before the core starts (server/machinery/tracing.py)
        serve_unary = servicer.traced_unary if traced else servicer.unary
        serve_stream = servicer.traced_stream if traced else servicer.stream
        for method in METHODS:
            if method.streaming:  # Watch: long-running, never counted
                handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                    _bytes_stream(partial(serve_stream, method), method.request))
            else:
                kind = Kind.READ_ONLY if method.read_only else Kind.MUTATING
                unary = _bytes_unary(partial(serve_unary, method), method.request)
                handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                    _limited(shedding, kind, servicer, method, unary))
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE.full_name, handlers),))
        server.add_registered_method_handlers(SERVICE.full_name, handlers)
        return [SERVICE.full_name]

    return add


def _bytes_unary(call: Handler, request_class: type[Message]) -> Callable[[bytes, Ctx], Awaitable[bytes]]:
    async def handle(data: bytes, context: Ctx) -> bytes:
        response: Message = await call(await _parse(request_class, data, context), context)
        return response.SerializeToString()

    return handle


def _limited(limiter: Limiter, kind: Kind, servicer: CoreService, method: Method,
             handle: Callable[[bytes, Ctx], Awaitable[bytes]]) -> Callable[[bytes, Ctx], Awaitable[bytes]]:
    async def limited(data: bytes, context: Ctx) -> bytes:
        if not limiter.try_acquire(kind):
            try:
                await limiter.acquire(kind, flow.of(servicer.credentials(context)))
            except errors.ApiError as err:
                if servicer.metrics is not None:
                    refused = apimetrics.request_labels(method.verb, "", "", "", "", "", "")  # not parsed yet
                    servicer.metrics.observe(refused, err.status.code, 0.0)
                await _abort(context, err)
        try:
            return await handle(data, context)
        finally:
            limiter.release(kind)

    return limited


def _bytes_stream(call: Handler, request_class: type[Message]) -> Callable[[bytes, Ctx], AsyncIterator[bytes]]:
    async def handle(data: bytes, context: Ctx) -> AsyncIterator[bytes]:
        async for response in call(await _parse(request_class, data, context), context):
            yield response.SerializeToString()

    return handle


async def _parse(request_class: type[Message], data: bytes, context: Ctx) -> Any:
    """The request message; a body that is not one is a 400 Status (INVALID_ARGUMENT)."""
    try:
        message = request_class.FromString(data)
    except DecodeError as err:
        await _abort(context, errors.bad_request(f"the request is not a {request_class.DESCRIPTOR.full_name}: {err}"))
    if field := wiretext.undecodable(message):
        await _abort(context, errors.bad_request(f"the request is not a {request_class.DESCRIPTOR.full_name}: "
                                                 f"{field} is not valid UTF-8"))
    return message
