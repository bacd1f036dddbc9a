"""One request kind's concurrency limit with fair queuing (APF's priority level, simplified): requests over
the limit wait in one of `queues` FIFO queues, chosen by shuffle sharding — a flow is dealt a fixed hand of
queues from its key and joins the shortest — and a freed slot goes to the next non-empty queue in turn.

So a flow that floods fills at most its hand's queues, and is refused ("queue-full") past them, while a
flow whose hand holds another queue waits behind one request per busy queue, not behind the flood.
Example: 128 queues, hands of 6, 50 per queue: one flooding client holds at most 300 waiting requests and
6 turns in 7 while one other client waits; memory is bounded by queues x queue_length whatever the clients.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from functools import lru_cache

from server.limits.config import Limits

# Why a request was refused, as apiserver_flowcontrol_rejected_requests_total labels it.
QUEUE_FULL = "queue-full"
TIME_OUT = "time-out"
CONCURRENCY_LIMIT = "concurrency-limit"


class Rejected(Exception):
    """The request is not served; `reason` is one of the labels above."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@lru_cache(maxsize=8192)
def hand(flow: int, deck: int, size: int) -> tuple[int, ...]:
    """The queues dealt to `flow`: `size` distinct indexes below `deck`, read from the key's digits in
    mixed radix (deck, deck-1, ...), as APF's shuffle-sharding dealer reads its hash."""
    remaining = list(range(deck))
    cards: list[int] = []
    value = flow
    for left in range(deck, max(deck - size, 0), -1):
        value, pick = divmod(value, left)
        cards.append(remaining.pop(pick))
    return tuple(cards)


class Lane:
    """Counts one kind's requests; every admitted request must be released exactly once."""

    def __init__(self, limit: int, limits: Limits) -> None:
        self.limit = limit
        self._limits = limits
        self._queues: list[deque[asyncio.Future[None]]] = [deque() for _ in range(max(limits.queues, 1))]
        self._turn = 0  # the queue whose turn is next
        self.executing = 0
        self.queued = 0
        self.rejected: Counter[str] = Counter()

    async def acquire(self, flow: int) -> None:
        """Returns once the request may run; raises Rejected when it may not."""
        if self.limit <= 0 or (self.executing < self.limit and not self.queued):
            self.executing += 1
            return
        if not self._limits.fair_queuing:
            raise self._reject(CONCURRENCY_LIMIT)
        queue = min((self._queues[i] for i in hand(flow, len(self._queues), self._limits.hand_size)), key=len)
        if len(queue) >= self._limits.queue_length:
            raise self._reject(QUEUE_FULL)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(waiter)
        self.queued += 1
        timer = asyncio.get_running_loop().call_later(self._limits.queue_wait, self._expire, queue, waiter)
        try:
            await waiter  # resolved by _dispatch, which counted the request as executing
        except asyncio.CancelledError:  # the client went away while waiting (or right after its turn came)
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.release()
            else:
                self._unqueue(queue, waiter)
            raise
        finally:
            timer.cancel()

    def release(self) -> None:
        self.executing -= 1
        self._dispatch()

    def _reject(self, reason: str) -> Rejected:
        self.rejected[reason] += 1
        return Rejected(reason)

    def _unqueue(self, queue: deque[asyncio.Future[None]], waiter: asyncio.Future[None]) -> bool:
        try:
            queue.remove(waiter)
        except ValueError:
            return False
        self.queued -= 1
        return True

    def _expire(self, queue: deque[asyncio.Future[None]], waiter: asyncio.Future[None]) -> None:
        if not waiter.done() and self._unqueue(queue, waiter):
            waiter.set_exception(self._reject(TIME_OUT))

    def _dispatch(self) -> None:
        """Free slots go to the queues in turn, one request each."""
        count = len(self._queues)
        while self.queued and self.executing < self.limit:
            for step in range(count):
                queue = self._queues[(self._turn + step) % count]
                if queue:
                    self._turn = (self._turn + step + 1) % count
                    break
            waiter = queue.popleft()
            self.queued -= 1
            if waiter.done():  # cancelled, not yet resumed to take itself out
                continue
            self.executing += 1
            waiter.set_result(None)
