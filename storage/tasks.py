"""Stopping the store's background tasks (the compactors, the etcd feed): cancelled and awaited, so none runs
after stop returns; anything but the cancellation itself still surfaces."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def cancel(task: asyncio.Task[Any] | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
