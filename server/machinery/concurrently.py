"""Running a batch of independent writes at once, so the store commits them together.

A start-up that writes its bootstrap objects one after another waits for one commit (and, on a durable
store, one fsync) per object; the same writes started together share a few commits. `each` is that,
with the error handling of the sequential loop it replaces: the first failure cancels the others and is
raised as it is (not wrapped in an ExceptionGroup), so callers keep catching what they caught.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any


async def each(calls: Iterable[Coroutine[Any, Any, object]]) -> None:
    """Await every call concurrently; the first failure cancels the rest and is raised."""
    try:
        async with asyncio.TaskGroup() as group:
            for call in calls:
                group.create_task(call)
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None
