"""Several cores behind one CoreClient (`capstan gateway --core A,B,C`): calls balanced round-robin over the
cores that are up, and failed over when one dies, without applying a write twice.

A core is marked down when a call to it fails UNAVAILABLE with no Status (CoreUnreachable: it did not answer)
or when its channel will not connect; a probe (grpc.health.v1 Check) marks it up again once it answers
SERVING. Which calls are sent again after a core died is `retry_safe`'s contract below; a watch is resumed on
another core from the last event it delivered (gateway/transport/resume.py), so an HTTP watcher sees no gap
and no duplicate.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.client import CoreClient, CoreError, failure
from gateway.transport import resume
from gateway.transport.grpc import CoreUnreachable, GrpcClient
from server.machinery.credentials import Credentials
from server.machinery.methods import Method, Retry

log = logging.getLogger("capstan.gateway.pool")

T = TypeVar("T")

CONNECT_TIMEOUT = 1.0  # seconds a call waits for a core's channel to connect before trying the next core
PROBE_INTERVAL = 1.0  # seconds between health checks of a core that is down
# A core that comes back is reconnected within seconds, not after gRPC's default backoff of up to 120 s.
RECONNECT_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
)
UNAVAILABLE_RETRY_AFTER = 1  # seconds: what a client waits before retrying a call no core received


@dataclass(eq=False)
class _Core:
    """One core's channel and whether calls go to it first (mutable: the pool's view of its health)."""

    target: str
    client: GrpcClient
    up: bool = True
    probe: asyncio.Task[None] | None = None


@dataclass(eq=False)
class _Pool:
    """What every caller view of one PoolClient shares: the cores, the round-robin cursor, the probes."""

    cores: list[_Core]
    connect_timeout: float
    probe_interval: float
    cursor: int = 0

    def order(self) -> list[_Core]:
        """The cores to try for one call: those up, round-robin from the cursor, then those down (a call
        reaches one only if its channel connects, which proves nothing was sent to a dead one)."""
        start, self.cursor = self.cursor, (self.cursor + 1) % len(self.cores)
        rotated = self.cores[start:] + self.cores[:start]
        return [core for core in rotated if core.up] + [core for core in rotated if not core.up]

    async def first_connected(self) -> _Core | None:
        for core in self.order():
            if await self.connects(core):
                return core
        return None

    async def connects(self, core: _Core) -> bool:
        if await core.client.connected(self.connect_timeout):
            return True
        self.down(core)
        return False

    def down(self, core: _Core) -> None:
        if core.up:
            log.warning("core %s is unreachable: calls go to the other cores until it answers again", core.target)
        core.up = False
        if core.probe is None:
            core.probe = asyncio.ensure_future(self._probe(core))

    def answered(self, core: _Core) -> None:
        if not core.up:
            log.info("core %s answers again", core.target)
        core.up = True

    async def _probe(self, core: _Core) -> None:
        try:
            while not core.up:
                if await core.client.serving(self.probe_interval):
                    self.answered(core)
                else:
                    await asyncio.sleep(self.probe_interval)
        finally:
            core.probe = None


def retry_safe(method: Method | None, request: Any) -> bool:
    """Whether a call whose core died after the request may have reached it can be sent to another core.

    When the channel did not connect, nothing was sent and every call goes to the next core. Once a request
    was written to a core that then died without answering, it may or may not have been applied; it is sent
    again only when applying it twice is impossible or harmless:
    - reads (get, list, watch, discover, access, issuer documents, health): no effect;
    - dry-run writes (dryRun=All): no effect;
    - an update (PUT) whose JSON or protobuf object carries metadata.resourceVersion: a compare-and-swap, so
      it applies at most once (if the first attempt did apply, the second answers 409 Conflict, as any stale
      update does, and the client re-reads);
    - a JSON merge or strategic merge patch setting metadata.resourceVersion, or a JSON patch that tests,
      adds or replaces /metadata/resourceVersion: the same precondition (server/objects/patch.py);
    - a delete with a uid or resourceVersion precondition: it deletes that one object at most once (a second
      attempt answers 404, or 409 when the name now holds another object).
    Never retried: creates (generateName would make a second object; a named one deleted meanwhile would be
    made again), unconditional updates and patches (they would overwrite a write made in between), deletes
    without preconditions (they would delete an object re-created in between), deletecollection, server-side
    apply and YAML bodies (not inspected). Those answer 504 Timeout without Retry-After, kube-apiserver's
    answer when it cannot tell whether a write completed, so no client retries them blindly.
    Which rule a method follows is its line in the method table (server/machinery/methods.py: `Retry`); the
    preconditions' tests are _PRECONDITIONS below. `method` None is a call outside the CoreService (health).
    """
    if method is None or method.retry is Retry.ALWAYS:
        return True
    if method.dry_run and _dry_run(getattr(request, method.dry_run).dryRun):
        return True
    return method.retry is Retry.PRECONDITIONED and _PRECONDITIONS[method.name](request)


def _dry_run(modes: Sequence[str]) -> bool:
    return "All" in modes


def _versioned_update(request: core_pb2.UpdateRequest) -> bool:
    return bool(resume.resource_version(request.object))


def _conditional_patch(request: core_pb2.PatchRequest) -> bool:
    if request.type in (core_pb2.PATCH_TYPE_MERGE, core_pb2.PATCH_TYPE_STRATEGIC_MERGE):
        return bool(resume.resource_version(core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=request.patch)))
    if request.type == core_pb2.PATCH_TYPE_JSON:
        return resume.json_patch_sets_resource_version(request.patch)
    return False


def _preconditioned_delete(request: core_pb2.DeleteRequest) -> bool:
    conditions = request.options.preconditions
    return bool(conditions.uid) or bool(conditions.resourceVersion)


# The precondition that lets each Retry.PRECONDITIONED method apply at most once, by method name.
_PRECONDITIONS: dict[str, Callable[[Any], bool]] = {
    "Update": _versioned_update,
    "Patch": _conditional_patch,
    "Delete": _preconditioned_delete,
}


def _unavailable(message: str) -> meta_pb2.Status:
    status = failure(503, "ServiceUnavailable", message)
    status.details.retryAfterSeconds = UNAVAILABLE_RETRY_AFTER
    return status


def _ambiguous(cause: meta_pb2.Status) -> meta_pb2.Status:
    return failure(504, "Timeout", "request did not complete: the core serving it went away before answering"
                                   f" ({cause.message}), so it may or may not have been applied;"
                                   " read the object before retrying")


class PoolClient(CoreClient):
    """CoreClient over several cores. `as_caller` views share the pool; `close` (of the pool itself) closes
    every channel."""

    def __init__(self, targets: Sequence[str], credentials: grpc.ChannelCredentials | None = None, *,
                 connect_timeout: float = CONNECT_TIMEOUT, probe_interval: float = PROBE_INTERVAL) -> None:
        if not targets:
            raise ValueError("a pool needs at least one core")
        cores = [_Core(target, GrpcClient(target, credentials, options=RECONNECT_OPTIONS)) for target in targets]
        self._pool = _Pool(cores, connect_timeout, probe_interval)
        self._credentials: Credentials | None = None

    def as_caller(self, credentials: Credentials) -> PoolClient:
        view = object.__new__(PoolClient)
        view._pool, view._credentials = self._pool, credentials
        return view

    def _client(self, core: _Core) -> GrpcClient:
        return core.client if self._credentials is None else core.client.as_caller(self._credentials)

    async def _send(self, method: Method | None, request: Any, send: Callable[[GrpcClient], Awaitable[T]]) -> T:
        for core in self._pool.order():
            if not await self._pool.connects(core):
                continue
            try:
                answer = await send(self._client(core))
            except CoreUnreachable as err:
                self._pool.down(core)
                if not retry_safe(method, request):
                    raise CoreError(_ambiguous(err.status)) from None
                continue
            self._pool.answered(core)
            return answer
        raise CoreError(_unavailable("no core is reachable"))

    async def unary(self, method: Method, request: Any) -> Any:
        return await self._send(method, request, lambda client: client.unary(method, request))

    async def health(self) -> dict[str, bool]:
        return await self._send(None, None, lambda client: client.health())

    async def stream(self, method: Method, request: Any) -> AsyncIterator[Any]:
        """A core that dies mid-watch is replaced by the next one, reopened where the watcher is
        (resume.Position); a refusal, or a core's ERROR, reaches the watcher as it would from one core."""
        if not isinstance(request, core_pb2.WatchRequest):
            raise TypeError(f"{method.name}: the pool knows how to resume a watch, no other stream")
        position = resume.Position(request, asyncio.get_running_loop().time())
        attempt: core_pb2.WatchRequest | None = request
        failures = 0
        while attempt is not None:
            core = await self._pool.first_connected()
            if core is None or failures > 2 * len(self._pool.cores):
                raise CoreError(_unavailable("no core is reachable to continue the watch"))
            stream = self._client(core).stream(method, attempt)
            try:
                async for batch in stream:
                    failures = 0
                    position.forwarded(batch)
                    yield batch
                return
            except CoreUnreachable:
                self._pool.down(core)
                failures += 1
                attempt = position.reopen(asyncio.get_running_loop().time())
            finally:
                await stream.aclose()  # type: ignore[attr-defined]

    async def close(self) -> None:
        for core in self._pool.cores:
            if core.probe is not None:
                core.probe.cancel()
        for core in self._pool.cores:
            await core.client.close()
