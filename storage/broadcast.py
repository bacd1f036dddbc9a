"""In-process watch fan-out: one committed event reaches every matching watcher once.

Writers publish a committed batch once; each subscriber gets a reference to the
same immutable Event objects in its own bounded queue, so nothing is re-read from
disk per watcher. Publishing never waits: a subscriber whose queue would pass its
bound is failed with WatcherTooSlow and removed (its client re-lists), so a slow
reader can hold up neither the writer nor the other watchers.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence

from storage.errors import StoreClosed, WatcherTooSlow
from storage.types import Event


class Subscriber:
    """One watcher's queue. Fed on the event loop by `Broadcaster.publish`."""

    __slots__ = ("_broadcaster", "_error", "_limit", "_queue", "_waiter", "closed", "prefix")

    def __init__(self, broadcaster: Broadcaster, prefix: bytes, limit: int) -> None:
        self._broadcaster = broadcaster
        self.prefix = prefix
        self._limit = limit
        self._queue: deque[Event] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self.closed = False

    def offer(self, events: Sequence[Event]) -> None:
        if self.closed:
            return
        if len(self._queue) + len(events) > self._limit:
            self.fail(WatcherTooSlow(f"watcher fell more than {self._limit} events behind"))
            return
        self._queue.extend(events)
        self._wake()

    def fail(self, error: BaseException) -> None:
        """Drop the queue and make the next take() raise `error`."""
        if self.closed:
            return
        self._error = error
        self._queue.clear()
        self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._broadcaster.unsubscribe(self)
            self._wake()

    @property
    def newest_queued(self) -> int:
        """The revision of the newest event waiting in the queue (0 when it is empty)."""
        return self._queue[-1].revision if self._queue else 0

    def check(self) -> None:
        """Raise the failure (WatcherTooSlow, StoreClosed), if any."""
        if self._error is not None:
            raise self._error

    def take_nowait(self) -> list[Event]:
        """Everything queued now (possibly nothing); raises the failure, if any."""
        self.check()
        items = list(self._queue)
        self._queue.clear()
        return items

    async def take(self) -> list[Event]:
        """At least one event, waiting if needed; [] only when closed without error."""
        while True:
            items = self.take_nowait()
            if items or self.closed:
                return items
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class Broadcaster:
    """Subscribers grouped by prefix, so each event is matched once per distinct prefix."""

    def __init__(self, queue_limit: int) -> None:
        self._queue_limit = queue_limit
        self._by_prefix: dict[bytes, set[Subscriber]] = {}
        self._closed = False

    def subscribe(self, prefix: bytes) -> Subscriber:
        sub = Subscriber(self, prefix, self._queue_limit)
        if self._closed:
            sub.fail(StoreClosed("the store is closed"))
        else:
            self._by_prefix.setdefault(prefix, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        subs = self._by_prefix.get(sub.prefix)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._by_prefix[sub.prefix]

    def publish(self, events: Sequence[Event]) -> None:
        """Deliver a committed batch, in revision order. Called on the event loop."""
        if not events or not self._by_prefix:
            return
        for prefix, subs in list(self._by_prefix.items()):
            matched = events if not prefix else [e for e in events if e.kv.key.startswith(prefix)]
            if matched:
                for sub in list(subs):
                    sub.offer(matched)

    @property
    def subscriber_count(self) -> int:
        return sum(len(s) for s in self._by_prefix.values())

    def close(self) -> None:
        self._closed = True
        for subs in list(self._by_prefix.values()):
            for sub in list(subs):
                sub.fail(StoreClosed("the store is closed"))
        self._by_prefix.clear()
