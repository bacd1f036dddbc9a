"""The Limiter both transports ask before serving a request: a Lane per request kind, kube's 429 when a
request is refused, and the counts /metrics shows."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from server.machinery import errors
from server.machinery.limits.config import DEFAULT, Kind, Limits
from server.machinery.limits.lane import Lane, Rejected

RETRY_AFTER = 1  # seconds, as kube-apiserver's filters answer
MESSAGE = "Too many requests, please try again later."


def too_many_requests() -> errors.ApiError:
    """kube's words (apierrors.NewTooManyRequests with the max-in-flight and APF filters' message and
    Retry-After). Those filters write the message as plain text; a Status carries the same code, message
    and retry delay on both transports, and it is what client-go makes of a 429 anyway."""
    return errors.ApiError(errors.status(429, "TooManyRequests", MESSAGE, retry_after=RETRY_AFTER))


@dataclass(frozen=True, slots=True)
class LaneState:
    kind: Kind
    executing: int
    queued: int
    rejected: dict[str, int]  # by reason (server/machinery/limits/lane.py)
    dispatched: int = 0  # requests admitted so far
    limit: int = 0  # requests executing at once (0: unlimited)


class Limiter:
    """Contract: `admit` either runs its block counted in its kind's lane or raises the 429 ApiError without
    running it; a request that waited and whose client left is never counted."""

    def __init__(self, limits: Limits = DEFAULT) -> None:
        self.limits = limits
        self._lanes = {kind: Lane(limits.limit(kind), limits) for kind in Kind}
        # The two lanes by name as well: the request path picks one by identity, without hashing the enum.
        self._read_only = self._lanes[Kind.READ_ONLY]
        self._mutating = self._lanes[Kind.MUTATING]

    def _lane(self, kind: Kind) -> Lane:
        return self._read_only if kind is Kind.READ_ONLY else self._mutating

    def try_acquire(self, kind: Kind) -> bool:
        """Counts a request in flight at once when its lane has room and nobody queued (release it with
        `release`); False when it would have to queue, and `acquire` decides."""
        return self._lane(kind).try_acquire()

    async def acquire(self, kind: Kind, flow: int) -> None:
        """Counts a request in flight (release it with `release`); raises the 429 ApiError instead."""
        try:
            await self._lane(kind).acquire(flow)
        except Rejected:
            raise too_many_requests() from None

    def release(self, kind: Kind) -> None:
        self._lane(kind).release()

    def waiting(self, flow: int) -> int:
        """The flow's requests queued now, of every kind."""
        return self._read_only.waiting.get(flow, 0) + self._mutating.waiting.get(flow, 0)

    @contextlib.asynccontextmanager
    async def admit(self, kind: Kind, flow: int) -> AsyncIterator[None]:
        await self.acquire(kind, flow)
        try:
            yield
        finally:
            self.release(kind)

    def states(self) -> list[LaneState]:
        return [LaneState(kind, lane.executing, lane.queued, dict(lane.rejected), lane.dispatched, lane.limit)
                for kind, lane in self._lanes.items()]
