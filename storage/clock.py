"""The acknowledged revision as the event loop sees it, and waiting for a future one.

A read or watch at a revision the store has not reached waits here, bounded by
`StoreOptions.future_wait`, rather than failing at once: a client that saw a
revision from another replica or a write in flight gets its answer a moment later.
"""

from __future__ import annotations

import asyncio

from storage.errors import RevisionTooLarge, StoreClosed


class RevisionClock:
    def __init__(self, revision: int) -> None:
        self._revision = revision
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._closed = False

    @property
    def revision(self) -> int:
        return self._revision

    def advance(self, revision: int) -> None:
        """Called on the loop when writes up to `revision` are acknowledged."""
        if revision <= self._revision:
            return
        self._revision = revision
        if not self._waiters:
            return
        still: list[tuple[int, asyncio.Future[None]]] = []
        for wanted, fut in self._waiters:
            if wanted <= revision:
                if not fut.done():
                    fut.set_result(None)
            else:
                still.append((wanted, fut))
        self._waiters = still

    async def wait_for(self, revision: int, timeout: float) -> None:
        """Return once `revision` is acknowledged; RevisionTooLarge after `timeout` seconds."""
        if revision <= self._revision:
            return
        if self._closed:
            raise StoreClosed("the store is closed")
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (revision, fut)
        self._waiters.append(entry)
        try:
            async with asyncio.timeout(timeout):  # not wait_for: on 3.11 it can swallow a cancellation
                await asyncio.shield(fut)
        except TimeoutError:
            raise RevisionTooLarge(revision, self._revision) from None
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)

    def close(self) -> None:
        self._closed = True
        for _, fut in self._waiters:
            if not fut.done():
                fut.set_exception(StoreClosed("the store is closed"))
        self._waiters = []
