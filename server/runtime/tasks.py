"""Stopping a controller: its tasks cancelled and awaited, none left running after stop returns."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any

from storage.tasks import wait_cancelled


async def cancel_all(tasks: Iterable[asyncio.Task[Any] | None]) -> None:
    """Cancel every task (None entries skipped), then wait for each; what they raise is dropped (a stop that is
    itself cancelled meanwhile stays cancelled)."""
    running = [task for task in tasks if task is not None]
    for task in running:
        task.cancel()
    for task in running:
        with contextlib.suppress(Exception):
            await wait_cancelled(task)
