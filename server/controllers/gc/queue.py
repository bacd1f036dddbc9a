"""The collector's work queue: client-go's rate-limited workqueue, reduced to what the collector needs.

An item added while queued is queued once; one added while a worker holds it is
queued again when the worker is done (so no change is missed and no item is
worked on twice at once). A failed item is added again after a delay that
doubles with each failure, from 5 ms up to MAX_DELAY, until it succeeds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)

BASE_DELAY = 0.005
MAX_DELAY = 30.0


class WorkQueue(Generic[T]):
    def __init__(self) -> None:
        self._ready: asyncio.Queue[T] = asyncio.Queue()
        self._dirty: set[T] = set()  # queued, or to be queued again when done
        self._processing: set[T] = set()
        self._failures: dict[T, int] = {}
        self._timers: dict[T, asyncio.TimerHandle] = {}

    def add(self, item: T) -> None:
        if item in self._dirty:
            return
        self._dirty.add(item)
        if item not in self._processing:
            self._ready.put_nowait(item)

    async def get(self) -> T:
        item = await self._ready.get()
        self._dirty.discard(item)
        self._processing.add(item)
        return item

    def done(self, item: T) -> None:
        self._processing.discard(item)
        if item in self._dirty:
            self._ready.put_nowait(item)

    def retry(self, item: T) -> None:
        """Add the item again later: BASE_DELAY doubled for each failure since it last succeeded."""
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        delay = min(BASE_DELAY * 2**failures, MAX_DELAY)
        if item not in self._timers:
            self._timers[item] = asyncio.get_running_loop().call_later(delay, self._due, item)

    def forget(self, item: T) -> None:
        """The item succeeded: its next failure starts again from BASE_DELAY."""
        self._failures.pop(item, None)

    def idle(self) -> bool:
        """Nothing queued, in hand, or waiting to be retried."""
        return not (self._dirty or self._processing or self._timers)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def _due(self, item: T) -> None:
        del self._timers[item]
        self.add(item)
