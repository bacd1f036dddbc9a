"""In-process watch fan-out: one committed event reaches every matching watcher once.

Writers publish a committed batch once; the watchers of one prefix share one log of
the same immutable Event objects and each keeps only a cursor into it, so a publish
costs the same with 1 or 2,000 watchers: it appends once per prefix and wakes only the
watchers waiting for events. A watcher that is busy or stuck (its client stopped
reading) is not touched at all until the log would hold more than the bound for it:
then it is failed with WatcherTooSlow and forgotten, so its client re-lists. The log
keeps only what some live watcher has not read, bounded in events and in bytes, so a
slow reader can hold up neither the writer nor the other watchers, and its memory
comes back when it is dropped or leaves.

A watcher takes the events one published batch at a time, as that batch's tuple: the same
object for every watcher of the prefix, so the layers above do per-batch work (rendering,
framing) once and share it by the batch's identity, however many watchers read it and
however far behind each is.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_right
from collections import deque
from collections.abc import Sequence
from itertools import islice

from storage.errors import StoreClosed, WatcherTooSlow
from storage.types import Event

MATCHES_KEPT = 4096  # directories whose watched prefixes a publish keeps; all are forgotten past it
QUEUE_BYTES = 64 << 20  # bytes of events one watcher may have unread before it is dropped
EVENT_OVERHEAD = 200  # bytes an Event costs beyond its keys and values (tuples, ints, the log's slot)


def event_size(event: Event) -> int:
    """What holding `event` in a log costs, as the byte bound counts it."""
    prev = event.prev
    return EVENT_OVERHEAD + len(event.kv.key) + len(event.kv.value) + (len(prev.value) if prev is not None else 0)


class _Log:
    """The events under one prefix that at least one of its watchers has not read yet.

    Sequence numbers are positions in the prefix's stream: events[0] is number `first`,
    the next event published will be number `end`. A watcher's cursor is the number of
    the next event it will read; `at` groups watchers by cursor, so trimming the head
    finds the watchers it leaves behind without looking at the others.
    Example: first=10, three events, end=13; a watcher at 13 is caught up, one at 10 has
    three unread; once nobody is at 10, event 10 is popped and first becomes 11.
    """

    __slots__ = ("at", "batches", "bytes", "events", "first", "prefix", "sizes", "subscribers", "waiting")

    def __init__(self, prefix: bytes) -> None:
        self.prefix = prefix
        self.events: deque[Event] = deque()
        self.sizes: deque[int] = deque()
        self.first = 0
        self.bytes = 0
        self.at: dict[int, set[Subscriber]] = {}
        self.waiting: set[Subscriber] = set()
        self.subscribers = 0
        self.batches: dict[int, tuple[Event, ...]] = {}  # the held events as published, by number of their first

    @property
    def end(self) -> int:
        return self.first + len(self.events)

    def place(self, sub: Subscriber, cursor: int) -> None:
        sub.cursor = cursor
        self.at.setdefault(cursor, set()).add(sub)

    def lift(self, sub: Subscriber) -> None:
        subs = self.at.get(sub.cursor)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self.at[sub.cursor]

    def pop_unneeded(self) -> None:
        """Forget the events every watcher has read."""
        if self.first in self.at or not self.events:
            return  # a watcher still needs the head, or nothing is held
        while self.events and self.first not in self.at:
            self.events.popleft()
            self.bytes -= self.sizes.popleft()
            self.first += 1
        if not self.events:
            self.bytes = 0
        self.forget_batches()

    def forget_batches(self) -> None:
        """Forget the batches whose events have all been popped."""
        batches = self.batches
        while batches:
            start, batch = next(iter(batches.items()))
            if start + len(batch) > self.first:
                break
            del batches[start]

    def append(self, events: Sequence[Event], count_limit: int, byte_limit: int) -> None:
        """Add a batch, then fail the watchers it leaves more than a bound behind."""
        self.batches[self.end] = tuple(events)
        for event in events:
            size = event_size(event)
            self.events.append(event)
            self.sizes.append(size)
            self.bytes += size
        dropped: list[Subscriber] = []
        # The newest event always stays, however large: a watcher that has read everything before it is not behind.
        if len(self.events) > count_limit or self.bytes > byte_limit:
            while len(self.events) > count_limit or (self.bytes > byte_limit and len(self.events) > 1):
                dropped.extend(self.at.pop(self.first, ()))
                self.events.popleft()
                self.bytes -= self.sizes.popleft()
                self.first += 1
            self.forget_batches()
        if dropped:
            error = WatcherTooSlow(f"watcher fell more than {count_limit} events or {byte_limit} bytes behind")
            for sub in dropped:
                sub.fail(error)
        self.pop_unneeded()
        waiting, self.waiting = self.waiting, set()
        for sub in waiting:
            sub.wake()


class Subscriber:
    """One watcher: a cursor into its prefix's log. Fed on the event loop by `Broadcaster.publish`."""

    __slots__ = ("_broadcaster", "_error", "_log", "_waiter", "closed", "cursor", "prefix")

    def __init__(self, broadcaster: Broadcaster, log: _Log) -> None:
        self._broadcaster = broadcaster
        self._log = log
        self.prefix = log.prefix
        self.cursor = 0
        self._waiter: asyncio.Future[bool] | None = None
        self._error: BaseException | None = None
        self.closed = False

    @property
    def unread(self) -> int:
        """Events published for this watcher and not taken yet (0 once closed)."""
        return 0 if self.closed else self._log.end - self.cursor

    @property
    def unread_bytes(self) -> int:
        """What the unread events cost, as the byte bound counts them (0 once closed)."""
        if self.closed:
            return 0
        log = self._log
        return sum(islice(log.sizes, self.cursor - log.first, None))

    def fail(self, error: BaseException) -> None:
        """Forget the unread events and make the next take() raise `error`."""
        if self.closed:
            return
        self._error = error
        self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._broadcaster.unsubscribe(self, self._log)
            self.wake()

    @property
    def newest_queued(self) -> int:
        """The revision of the newest event waiting to be read (0 when there is none)."""
        log = self._log
        return log.events[-1].revision if not self.closed and self.cursor < log.end else 0

    def check(self) -> None:
        """Raise the failure (WatcherTooSlow, StoreClosed), if any."""
        if self._error is not None:
            raise self._error

    def take_nowait(self) -> Sequence[Event]:
        """The next batch published that this watcher has not read (empty if none); raises the failure, if any.

        The batch is the tuple every watcher of the prefix gets for it (`is` the same object)."""
        self.check()
        log = self._log
        if self.closed or self.cursor == log.end:
            return ()
        items: Sequence[Event] | None = log.batches.get(self.cursor)
        if items is None:  # not at a batch's start (no path leaves a live watcher there): everything unread
            items = list(islice(log.events, self.cursor - log.first, None))
        log.lift(self)
        log.place(self, self.cursor + len(items))
        log.pop_unneeded()
        return items

    async def take(self, within: float | None = None) -> Sequence[Event]:
        """The next batch, waiting if needed; empty when closed without error, or when `within` seconds
        passed with nothing published (one timer for the wait, none when a batch is there already)."""
        while True:
            items = self.take_nowait()
            if items or self.closed:
                return items
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[bool] = loop.create_future()
            self._waiter = waiter
            self._log.waiting.add(self)
            timer = None if within is None else loop.call_later(within, _expire, waiter)
            try:
                woken = await waiter
            finally:
                if timer is not None:
                    timer.cancel()
                self._waiter = None
                self._log.waiting.discard(self)
            if not woken:
                return ()

    def wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(True)


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


class Broadcaster:
    """One shared log per distinct prefix, so each event is matched and stored once per prefix."""

    def __init__(self, queue_limit: int, *, byte_limit: int = QUEUE_BYTES) -> None:
        self._queue_limit = queue_limit
        self._byte_limit = byte_limit
        self._logs: dict[bytes, _Log] = {}
        # The lengths of the watched prefixes (ascending) and how many prefixes have each: a publish looks up each
        # event key's leading bytes of those lengths, so it costs what the matching prefixes cost, not one scan per
        # watched prefix.
        self._lengths: list[int] = []
        self._per_length: dict[int, int] = {}
        # By a key's directory (its bytes up to its last "/"): the watched prefixes no longer than the directory
        # that it starts with, and where in _lengths the longer prefixes begin. Keys of one directory (a resource
        # in a namespace) share the answer; any change to the set of prefixes forgets them all.
        self._matches: dict[bytes, tuple[tuple[bytes, ...], int]] = {}
        self._closed = False

    def subscribe(self, prefix: bytes) -> Subscriber:
        log = self._logs.get(prefix)
        if log is None:
            log = self._logs[prefix] = _Log(prefix)
            self._counted(len(prefix), 1)
        sub = Subscriber(self, log)
        log.place(sub, log.end)
        log.subscribers += 1
        if self._closed:
            sub.fail(StoreClosed("the store is closed"))
        return sub

    def unsubscribe(self, sub: Subscriber, log: _Log) -> None:
        log.lift(sub)
        log.waiting.discard(sub)
        log.subscribers -= 1
        if log.subscribers == 0:
            if self._logs.get(log.prefix) is log:
                del self._logs[log.prefix]
                self._counted(len(log.prefix), -1)
        else:
            log.pop_unneeded()

    def wants(self, key: bytes) -> bool:
        """Whether `publish` would give an event on `key` to some watcher (it drops the others)."""
        logs = self._logs
        if not logs:
            return False
        if b"" in logs:
            return True
        size = len(key)
        for n in self._lengths:
            if n > size:
                return False
            if key[:n] in logs:
                return True
        return False

    def publish(self, events: Sequence[Event]) -> None:
        """Deliver a committed batch, in revision order. Called on the event loop."""
        if not events or not self._logs:
            return
        logs, lengths, matches = self._logs, self._lengths, self._matches
        matched: dict[bytes, list[Event]] = {}
        for event in events:
            key = event.kv.key
            cut = key.rfind(b"/") + 1
            directory = key[:cut]
            known = matches.get(directory)
            if known is None:
                if len(matches) >= MATCHES_KEPT:
                    matches.clear()
                longer = bisect_right(lengths, cut)
                known = matches[directory] = (
                    tuple(directory[:n] for n in lengths[:longer] if n and directory[:n] in logs), longer)
            prefixes, longer = known
            for prefix in prefixes:
                matched.setdefault(prefix, []).append(event)
            if longer < len(lengths):  # prefixes that reach into the key's last segment
                size = len(key)
                for n in lengths[longer:]:
                    if n > size:
                        break
                    if key[:n] in logs:
                        matched.setdefault(key[:n], []).append(event)
        whole = logs.get(b"")
        if whole is not None:
            whole.append(events, self._queue_limit, self._byte_limit)
        for prefix, batch in matched.items():
            log = logs.get(prefix)
            if log is not None:
                log.append(batch, self._queue_limit, self._byte_limit)

    def _counted(self, length: int, change: int) -> None:
        count = self._per_length.get(length, 0) + change
        if count:
            self._per_length[length] = count
        else:
            self._per_length.pop(length, None)
        self._lengths = sorted(self._per_length)
        self._matches.clear()

    @property
    def subscriber_count(self) -> int:
        return sum(log.subscribers for log in self._logs.values())

    @property
    def held_events(self) -> int:
        """Events held for watchers that have not read them, over all prefixes."""
        return sum(len(log.events) for log in self._logs.values())

    @property
    def held_bytes(self) -> int:
        """What the held events cost, as the byte bound counts them."""
        return sum(log.bytes for log in self._logs.values())

    def fail_all(self, error: BaseException) -> None:
        """End every watcher with `error` (its next take() raises it); later subscribers are not affected."""
        for log in list(self._logs.values()):
            for subs in list(log.at.values()):
                for sub in list(subs):
                    sub.fail(error)

    def close(self) -> None:
        self._closed = True
        self.fail_all(StoreClosed("the store is closed"))
        self._logs.clear()
        self._per_length.clear()
        self._matches.clear()
        self._lengths = []
