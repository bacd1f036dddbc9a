"""A work queue's consumers, as client-go controllers run them (processNextWorkItem): each worker takes an item,
syncs it, and then forgets it (success) or adds it back rate-limited (a failure `retry` says is worth another
try); either way the item is done, so a change queued meanwhile is synced next.

    worker = Worker(WorkQueue(ExponentialBackoff(0.5, 0.5)), sync, name="capstan-endpoint-controller")
    await worker.drain()   # what is queued now, synced before the controller counts as started
    worker.start()         # then `count` tasks, until stop()

What `sync` raises never stops a worker: `retry(item, err)` decides (and logs); by default every failure is
retried.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from server.runtime.tasks import cancel_all
from server.runtime.workqueue import ShutDown, WorkQueue

log = logging.getLogger(__name__)

T = TypeVar("T", bound=Hashable)


def always(item: object, err: Exception) -> bool:
    log.warning("syncing %s failed: %s", item, err)
    return True


class Worker(Generic[T]):
    def __init__(self, queue: WorkQueue[T], sync: Callable[[T], Awaitable[None]], *, name: str, count: int = 1,
                 retry: Callable[[T, Exception], bool] = always) -> None:
        self.queue = queue
        self._sync = sync
        self._name = name
        self._count = count
        self._retry = retry
        self._tasks: list[asyncio.Task[None]] = []

    async def drain(self) -> None:
        """Sync the items queued now, one at a time (those queued meanwhile wait for the workers)."""
        for _ in range(len(self.queue)):
            item = self.queue.get_nowait()
            if item is None:
                return
            await self._process(item)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._work(), name=self._name if self._count == 1 else f"{self._name}-{i}")
                       for i in range(self._count)]

    async def stop(self) -> None:
        """Shut the queue down and stop the workers (an item in hand is cancelled with its worker)."""
        self.queue.shut_down()
        await cancel_all(self._tasks)
        self._tasks = []

    def running(self) -> bool:
        return bool(self._tasks) and not any(task.done() for task in self._tasks)

    async def _work(self) -> None:
        while True:
            try:
                item = await self.queue.get()
            except ShutDown:
                return
            await self._process(item)

    async def _process(self, item: T) -> None:
        try:
            await self._sync(item)
        except Exception as err:
            try:
                again = self._retry(item, err)
            except Exception:
                log.exception("%s: deciding whether to retry %s failed", self._name, item)
                again = True
            if again:
                self.queue.add_rate_limited(item)
            else:
                self.queue.forget(item)
        else:
            self.queue.forget(item)
        finally:
            self.queue.done(item)
