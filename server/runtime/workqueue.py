"""The controllers' work queue, as client-go's util/workqueue: a rate-limited, delaying queue of keys.

Contracts, as client-go's:
- an item added while it waits is queued once (dirty set); one added while a worker holds it (processing set)
  is queued again when the worker calls done(), so no change is missed and no item is worked on twice at once;
- add_after(item, delay) adds it once the delay has passed (an item already waiting keeps the sooner time);
  add_rate_limited(item) waits what the rate limiter says for its failures so far, and forget(item) clears
  them once the item succeeds;
- shut_down(): adds are ignored from then on and pending delays dropped; get() still hands out what is queued,
  then raises ShutDown. shut_down_with_drain() also waits until the workers have done every item.

    queue.add("a"); queue.add("a")        -> one "a" queued
    item = await queue.get()              -> "a", now processing
    queue.add("a")                        -> dirty, not queued
    queue.done("a")                       -> "a" queued again
    queue.add_rate_limited("a") (x3)      -> ready after 5 ms, then 10 ms, then 20 ms (ExponentialBackoff)

Single event loop: every method but get() and shut_down_with_drain() is synchronous and never blocks.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)

BASE_DELAY = 0.005  # client-go's DefaultControllerRateLimiter: 5 ms doubled per failure
MAX_DELAY = 1000.0  # ... up to 1000 s


class ShutDown(Exception):
    """get() on a queue that is shut down and empty: the worker stops."""


class RateLimiter(Protocol[T_contra]):
    """How long an item waits before its next try (client-go's RateLimiter)."""

    def when(self, item: T_contra) -> float: ...

    def forget(self, item: T_contra) -> None: ...

    def requeues(self, item: T_contra) -> int: ...


class ExponentialBackoff(Generic[T]):
    """client-go's ItemExponentialFailureRateLimiter: base * 2**failures, at most cap. base == cap is a constant
    delay per retry."""

    def __init__(self, base: float = BASE_DELAY, cap: float = MAX_DELAY) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        if failures > 64:  # 2**64 * base is past any cap
            return self.cap
        return float(min(self.base * 2**failures, self.cap))

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


class WorkQueue(Generic[T]):
    def __init__(self, rate_limiter: RateLimiter[T] | None = None) -> None:
        self._limiter: RateLimiter[T] = rate_limiter if rate_limiter is not None else ExponentialBackoff()
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()  # queued, or to be queued again when done
        self._processing: set[T] = set()
        self._waiting: dict[T, asyncio.TimerHandle] = {}  # add_after's items, until their time
        self._ready = asyncio.Event()  # set while something is queued, or once shut down
        self._finished = asyncio.Event()  # set by every done()
        self._shutting_down = False

    def __len__(self) -> int:
        """Items queued now (not those in hand or waiting for their delay)."""
        return len(self._queue)

    def add(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        if item not in self._processing:
            self._queue.append(item)
            self._ready.set()

    async def get(self) -> T:
        """The next item, now in hand until done(item); ShutDown once shut down and empty."""
        while not self._queue:
            if self._shutting_down:
                raise ShutDown
            self._ready.clear()
            await self._ready.wait()
        return self._take()

    def get_nowait(self) -> T | None:
        """The next item if one is queued now (then in hand until done), else None."""
        return self._take() if self._queue else None

    def done(self, item: T) -> None:
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self._ready.set()
        self._finished.set()

    def add_after(self, item: T, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        loop = asyncio.get_running_loop()
        waiting = self._waiting.get(item)
        if waiting is not None:
            if waiting.when() <= loop.time() + delay:
                return
            waiting.cancel()
        self._waiting[item] = loop.call_later(delay, self._due, item)

    def add_rate_limited(self, item: T) -> None:
        self.add_after(item, self._limiter.when(item))

    def forget(self, item: T) -> None:
        """The item succeeded: its next failure waits the rate limiter's first delay again."""
        self._limiter.forget(item)

    def requeues(self, item: T) -> int:
        return self._limiter.requeues(item)

    def idle(self) -> bool:
        """Nothing queued, in hand, or waiting for its delay."""
        return not (self._dirty or self._processing or self._waiting)

    def shutting_down(self) -> bool:
        return self._shutting_down

    def shut_down(self) -> None:
        self._shutting_down = True
        for timer in self._waiting.values():
            timer.cancel()
        self._waiting.clear()
        self._ready.set()

    async def shut_down_with_drain(self) -> None:
        """Shut down, then wait until the workers have taken every queued item and are done with each."""
        self.shut_down()
        while self._queue or self._processing:
            self._finished.clear()
            await self._finished.wait()

    def _take(self) -> T:
        item = self._queue.popleft()
        self._dirty.discard(item)
        self._processing.add(item)
        return item

    def _due(self, item: T) -> None:
        del self._waiting[item]
        self.add(item)
