"""Parked connections: a client that already has requests waiting in the fair queues sends no more into the
server until they drain.

Fair queuing (server/machinery/limits/) decides whose request runs next, but only once a request has been read,
parsed and classified, and on one event loop that work is the server's: 2,000 clients of one flow arriving
together cost 2,000 parses and, past the queues, 2,000 refusals, whose clients all come back one
Retry-After later together. Every other client's request waits behind those callbacks, however fair the
queues. kube-apiserver does the same work on goroutines over every core; a single loop cannot.

So once a flow has `high` requests waiting (by default the limits' queue length: as many as fill one of
its queues), each of its connections is parked when its request has been
answered: the transport stops reading, so the client's next request waits in the kernel's socket buffer
and costs the loop nothing. A parked connection is resumed, oldest first, each time a request finishes
while its flow has fewer than `high` waiting (so a flood is read about as fast as it is served), and
after `max_park` seconds whatever happens (its next request is then queued or refused by the usual
rules, so a client is never held past the queues' wait limit without an answer). A flow with fewer than
`high` waiting, such as any client that is not flooding, is never parked. Long-running requests (watches)
are never counted, so never parked. Memory: one entry per parked connection, bounded by the connection cap.
"""

from __future__ import annotations

import asyncio
from collections import deque

from aiohttp import web

from server.machinery.limits.limiter import Limiter

MAX_PARK = 5.0  # seconds a connection stays parked at most
SWEEP = 1.0  # seconds between looks for connections parked past MAX_PARK


class ParkingLot:
    def __init__(self, limiter: Limiter, *, high: int = 0, max_park: float = MAX_PARK) -> None:
        self._limiter = limiter
        self._high = high or max(limiter.limits.queue_length, 1)
        self._max_park = max_park
        self._parked: dict[int, deque[tuple[asyncio.Transport, float]]] = {}
        self._sweeper: asyncio.TimerHandle | None = None
        self.parked = 0  # connections parked now
        self.parks = 0  # connections parked so far

    def answered(self, request: web.Request, flow: int) -> None:
        """`request`, counted for `flow`, has been handled: park its connection if the flow is flooding."""
        if self._limiter.waiting(flow) < self._high:
            return
        transport = request.transport
        if not isinstance(transport, asyncio.Transport) or transport.is_closing():
            return
        loop = asyncio.get_running_loop()
        transport.pause_reading()
        self._parked.setdefault(flow, deque()).append((transport, loop.time()))
        self.parked += 1
        self.parks += 1
        if self._sweeper is None:
            self._sweeper = loop.call_later(SWEEP, self._sweep)

    def finished(self) -> None:
        """A counted request has finished: each parked flow below `high` gets one connection back."""
        if not self._parked:
            return
        for flow in list(self._parked):
            if self._limiter.waiting(flow) < self._high:
                self._resume_one(flow)

    def _resume_one(self, flow: int) -> None:
        parked = self._parked[flow]
        transport, _ = parked.popleft()
        self.parked -= 1
        if not parked:
            del self._parked[flow]
        if not transport.is_closing():
            transport.resume_reading()

    def _sweep(self) -> None:
        """Resume what has been parked past max_park; look again while anything is parked."""
        self._sweeper = None
        oldest = asyncio.get_running_loop().time() - self._max_park
        for flow in list(self._parked):
            parked = self._parked[flow]
            while flow in self._parked and parked[0][1] <= oldest:
                self._resume_one(flow)
        if self._parked:
            self._sweeper = asyncio.get_running_loop().call_later(SWEEP, self._sweep)

    def close(self) -> None:
        """Resume every parked connection (the server is stopping: they are answered or closed)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for flow in list(self._parked):
            while flow in self._parked:
                self._resume_one(flow)
