"""Watch = subscribe live, replay history, drop duplicates by revision (as kine does).

Every backend builds its watches from this one class, so the no-gap, no-duplicate
rule is written once. The order matters: the subscriber is registered before
history is read, so an event committed while history is being read is either in
the history snapshot or in the live queue (or both) — never in neither — and the
revision filter removes the doubles.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from storage.broadcast import Subscriber
from storage.clock import RevisionClock
from storage.types import Event

REPLAY_CHUNK = 1_000  # history events read per snapshot while catching up


@dataclass(frozen=True, slots=True)
class HistoryPage:
    """Events under a prefix with revision in (after, through], in order.

    complete: `through` is the newest revision of the snapshot read, so the
    watch can switch to live events.
    """

    events: Sequence[Event]
    through: int
    complete: bool


class HistorySource(Protocol):
    def read_history(self, prefix: bytes, after: int, limit: int) -> HistoryPage:
        """At most `limit` matching events after `after`; Compacted if `after` is too old."""
        ...


class ReplayingWatch:
    """The `storage.interface.Watch` every backend returns."""

    def __init__(
        self,
        *,
        source: HistorySource,
        clock: RevisionClock,
        subscriber: Subscriber,
        from_revision: int,
        future_wait: float,
    ) -> None:
        self._source = source
        self._clock = clock
        self._sub = subscriber
        self._position = from_revision  # every event <= this has been handed out
        self._future_wait = future_wait
        self._started = False
        self._replaying = True
        self._done = False
        self._pending: deque[Event] = deque()

    def __aiter__(self) -> ReplayingWatch:
        return self

    async def __anext__(self) -> Event:
        if not self._pending:
            self._pending.extend(await self.next_batch())
        return self._pending.popleft()

    async def next_batch(self, within: float | None = None) -> Sequence[Event]:
        if self._done:
            raise StopAsyncIteration
        try:
            return await self._next_batch(within)
        except BaseException:
            self._finish()
            raise

    async def _next_batch(self, within: float | None) -> Sequence[Event]:
        self._sub.check()  # dropped while replaying counts too: the client must re-list
        if not self._started:
            self._started = True
            await self._clock.wait_for(self._position, self._future_wait)
        while self._replaying:
            self._sub.check()
            page = self._source.read_history(self._sub.prefix, self._position, REPLAY_CHUNK)
            self._position = max(self._position, page.through)
            self._replaying = not page.complete
            if page.events:
                return page.events
        while True:
            items = await self._sub.take(within)
            if not items:
                if self._sub.closed:
                    raise StopAsyncIteration
                return ()  # `within` passed
            if items[-1].revision <= self._position:
                continue
            if items[0].revision <= self._position:
                items = [e for e in items if e.revision > self._position]
            self._position = items[-1].revision
            return items

    def close(self) -> None:
        self._finish()

    def progress(self) -> int:
        # Events are queued in the same loop callback that advances the clock, so with replay over
        # and nothing queued, every change up to the clock's revision has been handed out.
        if self._pending:  # returned by next_batch, not yet by __anext__
            return self._pending[0].revision - 1
        if self._replaying or self._sub.newest_queued > self._position:
            return self._position
        return max(self._position, self._clock.revision)

    def _finish(self) -> None:
        self._done = True
        self._pending.clear()
        self._sub.close()

    async def __aenter__(self) -> ReplayingWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
