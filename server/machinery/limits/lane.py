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
from dataclasses import dataclass
from functools import lru_cache

from server.machinery.limits.config import Limits

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


@dataclass(frozen=True, slots=True, eq=False)
class _Waiter:
    """A queued request: resolved when its turn comes; `flow` is whose it is."""

    turn: asyncio.Future[None]
    flow: int


class Lane:
    """Counts one kind's requests; every admitted request must be released exactly once."""

    def __init__(self, limit: int, limits: Limits) -> None:
        self.limit = limit
        self._limits = limits
        self._queues: list[deque[_Waiter]] = [deque() for _ in range(max(limits.queues, 1))]
        self._turn = 0  # the queue whose turn is next
        self.executing = 0
        self.queued = 0
        self.dispatched = 0  # requests admitted so far
        self.rejected: Counter[str] = Counter()
        self.waiting: Counter[int] = Counter()  # requests queued, by flow (a flow with none is not a key)

    def try_acquire(self) -> bool:
        """Counts the request as executing when it may run at once (no wait, no queue); False otherwise."""
        if self.limit <= 0 or (self.executing < self.limit and not self.queued):
            self.executing += 1
            self.dispatched += 1
            return True
        return False

    async def acquire(self, flow: int) -> None:
        """Returns once the request may run; raises Rejected when it may not."""
        if self.try_acquire():
            return
        if not self._limits.fair_queuing:
            raise self._reject(CONCURRENCY_LIMIT)
        queue = min((self._queues[i] for i in hand(flow, len(self._queues), self._limits.hand_size)), key=len)
        if len(queue) >= self._limits.queue_length:
            raise self._reject(QUEUE_FULL)
        waiter = _Waiter(asyncio.get_running_loop().create_future(), flow)
        queue.append(waiter)
        self.queued += 1
        self.waiting[flow] += 1
        timer = asyncio.get_running_loop().call_later(self._limits.queue_wait, self._expire, queue, waiter)
        try:
            await waiter.turn  # resolved by _dispatch, which counted the request as executing
        except asyncio.CancelledError:  # the client went away while waiting (or right after its turn came)
            turn = waiter.turn
            if turn.done() and not turn.cancelled() and turn.exception() is None:
                self.release()
            else:
                self._unqueue(queue, waiter)
            raise
        finally:
            timer.cancel()
        self.dispatched += 1

    def release(self) -> None:
        self.executing -= 1
        self._dispatch()

    def _reject(self, reason: str) -> Rejected:
        self.rejected[reason] += 1
        return Rejected(reason)

    def _unqueue(self, queue: deque[_Waiter], waiter: _Waiter) -> bool:
        try:
            queue.remove(waiter)
        except ValueError:
            return False
        self._left(waiter)
        return True

    def _left(self, waiter: _Waiter) -> None:
        self.queued -= 1
        left = self.waiting[waiter.flow] - 1
        if left:
            self.waiting[waiter.flow] = left
        else:
            del self.waiting[waiter.flow]

    def _expire(self, queue: deque[_Waiter], waiter: _Waiter) -> None:
        if not waiter.turn.done() and self._unqueue(queue, waiter):
            waiter.turn.set_exception(self._reject(TIME_OUT))

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
            self._left(waiter)
            if waiter.turn.done():  # cancelled, not yet resumed to take itself out
                continue
            self.executing += 1
            waiter.turn.set_result(None)
