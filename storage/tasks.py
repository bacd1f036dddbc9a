"""Stopping background tasks (the compactors, the etcd feed, the watch caches, the controllers): cancelled and
awaited, so none runs after the stop returns; anything but the cancellation itself still surfaces, and a stop
that is itself cancelled meanwhile stays cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any


async def cancel(task: asyncio.Task[Any] | None) -> None:
    await cancel_each((task,))


async def cancel_each(tasks: Iterable[asyncio.Task[Any] | None]) -> None:
    """Cancel every task (None entries skipped), then wait for each."""
    running = [task for task in tasks if task is not None]
    for task in running:
        task.cancel()
    for task in running:
        await wait_cancelled(task)


async def wait_cancelled(task: asyncio.Task[Any]) -> None:
    """Wait for a task that was cancelled: its cancellation ends here, anything else it raises surfaces."""
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # the caller is being cancelled too: not the task's cancellation to drop
