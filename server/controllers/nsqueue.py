"""Namespaces waiting for a controller's sync, synced one at a time by one worker.

The per-namespace controllers (perns.py's kept objects, the resourcequota controller) queue a namespace when
something in it changes; a namespace queued again before its turn is synced once. `drain` syncs what is
queued now, in name order (a controller's start uses it so that what exists is synced before serving), and
`run` does so whenever something is queued, for ever. What `sync` raises is its own to handle: a sync that
fails is queued again by the controller (`retry_later`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

RETRY = 1.0  # seconds before a failed namespace is synced again


class NamespaceQueue:
    def __init__(self, sync: Callable[[str], Awaitable[None]]) -> None:
        self._sync = sync
        self._pending: set[str] = set()
        self._wake = asyncio.Event()

    def add(self, namespace: str) -> None:
        self._pending.add(namespace)
        self._wake.set()

    def retry_later(self, namespace: str, delay: float = RETRY) -> None:
        asyncio.get_running_loop().call_later(delay, self.add, namespace)

    async def drain(self) -> None:
        """Sync every namespace queued now, in name order."""
        self._wake.clear()
        batch, self._pending = self._pending, set()
        for namespace in sorted(batch):
            await self._sync(namespace)
        if self._pending:
            self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            await self.drain()
