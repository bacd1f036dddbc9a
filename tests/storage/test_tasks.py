"""Stopping background tasks: the task ends cancelled, what it raised surfaces (or is dropped, for the
controllers' cancel_all), and a stop that is itself cancelled stays cancelled rather than returning."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from server.runtime.tasks import cancel_all
from storage.tasks import cancel, cancel_each

STOPS: list[tuple[str, Callable[[asyncio.Task[Any]], Awaitable[None]]]] = [
    ("cancel", cancel),
    ("cancel_each", lambda task: cancel_each([task, None])),
    ("cancel_all", lambda task: cancel_all([None, task])),
]


async def forever() -> None:
    await asyncio.Event().wait()


async def stubborn() -> None:
    """Takes a while to finish once cancelled, as a task flushing what it holds does."""
    try:
        await asyncio.Event().wait()
    finally:
        await asyncio.sleep(0.05)


@pytest.mark.parametrize(("name", "stop"), STOPS, ids=[name for name, _ in STOPS])
async def test_a_stop_ends_the_task(name: str, stop: Callable[[asyncio.Task[Any]], Awaitable[None]]) -> None:
    task = asyncio.get_running_loop().create_task(forever())
    await asyncio.sleep(0)
    await asyncio.wait_for(stop(task), 5)
    assert task.cancelled()


@pytest.mark.parametrize(("name", "stop"), STOPS, ids=[name for name, _ in STOPS])
async def test_a_stop_that_is_cancelled_stays_cancelled(name: str,
                                                         stop: Callable[[asyncio.Task[Any]], Awaitable[None]]) -> None:
    task = asyncio.get_running_loop().create_task(stubborn())
    await asyncio.sleep(0)
    stopping = asyncio.ensure_future(stop(task))
    await asyncio.sleep(0.01)  # the stop waits for the task's finally now
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(stopping, 5)
    assert task.done()


@pytest.mark.parametrize(("name", "stop", "surfaces"), [(*s, s[0] != "cancel_all") for s in STOPS],
                         ids=[name for name, _ in STOPS])
async def test_what_a_task_raised_as_it_stopped(name: str, stop: Callable[[asyncio.Task[Any]], Awaitable[None]],
                                                surfaces: bool) -> None:
    async def failing() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            raise RuntimeError("flush failed")

    task = asyncio.get_running_loop().create_task(failing())
    await asyncio.sleep(0)
    if surfaces:
        with pytest.raises(RuntimeError, match="flush failed"):
            await stop(task)
    else:
        await stop(task)
    assert task.done()
