"""The work queue and its workers, as client-go's util/workqueue behaves: an item queued once however often it
is added, never handed to two workers at once, re-queued when added while in hand, retried after a backoff that
doubles per failure, and a queue that shuts down hands out what it holds, then stops its workers."""

from __future__ import annotations

import asyncio
import time

import pytest

from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, ShutDown, WorkQueue


def _ready(queue: WorkQueue[str]) -> list[str]:
    """Take every item queued now (each then in hand)."""
    taken = []
    while (item := queue.get_nowait()) is not None:
        taken.append(item)
    return taken


@pytest.mark.parametrize(("steps", "ready"), [
    # add: "+x"; take one: "get"; done: "-x"
    (["+a", "+a", "+b", "+a"], ["a", "b"]),
    (["+a", "get", "+a"], []),  # in hand: dirty, not queued
    (["+a", "get", "+a", "-a"], ["a"]),  # done: queued again
    (["+a", "get", "-a"], []),  # done, not added meanwhile: gone
    (["+a", "get", "+a", "+a", "-a"], ["a"]),  # added twice while in hand: once
    (["+a", "+b", "get", "+a", "-a"], ["b", "a"]),  # re-queued behind what waited
])
async def test_dedup_dirty_and_processing(steps: list[str], ready: list[str]) -> None:
    queue: WorkQueue[str] = WorkQueue()
    for step in steps:
        if step == "get":
            await queue.get()
        elif step.startswith("+"):
            queue.add(step[1:])
        else:
            queue.done(step[1:])
    assert _ready(queue) == ready


@pytest.mark.parametrize(("base", "cap", "delays"), [
    (0.005, 1000.0, [0.005, 0.01, 0.02, 0.04, 0.08]),  # client-go's default per-item backoff
    (0.005, 0.03, [0.005, 0.01, 0.02, 0.03, 0.03]),  # capped
    (0.5, 0.5, [0.5, 0.5, 0.5]),  # a constant retry delay
])
def test_backoff_doubles_per_failure_until_forgotten(base: float, cap: float, delays: list[float]) -> None:
    limiter: ExponentialBackoff[str] = ExponentialBackoff(base, cap)
    assert [limiter.when("a") for _ in delays] == pytest.approx(delays)
    assert limiter.requeues("a") == len(delays) and limiter.requeues("b") == 0
    limiter.forget("a")
    assert limiter.requeues("a") == 0 and limiter.when("a") == pytest.approx(base)


async def test_rate_limited_items_come_back_after_their_backoff() -> None:
    queue: WorkQueue[str] = WorkQueue(ExponentialBackoff(0.05, 1.0))
    waited = []
    for _ in range(3):
        start = time.monotonic()
        queue.add_rate_limited("a")
        assert len(queue) == 0 and not queue.idle()  # waiting for its time
        item = await asyncio.wait_for(queue.get(), 2.0)
        waited.append(time.monotonic() - start)
        queue.done(item)
    assert queue.requeues("a") == 3
    for got, wanted in zip(waited, (0.05, 0.1, 0.2), strict=True):
        assert wanted * 0.9 <= got < wanted + 0.5
    queue.forget("a")
    assert queue.requeues("a") == 0 and queue.idle()


@pytest.mark.parametrize(("delays", "wanted"), [
    ((1.0, 0.05), 0.05),  # a sooner time replaces a later one
    ((0.05, 1.0), 0.05),  # a later time leaves the sooner one
])
async def test_add_after_keeps_the_sooner_time(delays: tuple[float, float], wanted: float) -> None:
    queue: WorkQueue[str] = WorkQueue()
    start = time.monotonic()
    for delay in delays:
        queue.add_after("a", delay)
    await asyncio.wait_for(queue.get(), 2.0)
    assert wanted * 0.9 <= time.monotonic() - start < 0.9  # well before the later time, on a loaded machine too
    await asyncio.sleep(1.05)
    assert len(queue) == 0  # once


async def test_shut_down_hands_out_what_is_queued_then_stops() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("b")
    queue.add_after("c", 0.05)
    queue.shut_down()
    queue.add("d")  # ignored
    queue.add_rate_limited("e")  # ignored
    assert [await queue.get(), await queue.get()] == ["a", "b"]
    with pytest.raises(ShutDown):
        await queue.get()
    await asyncio.sleep(0.1)
    assert len(queue) == 0  # "c"'s delay was dropped


async def test_shut_down_wakes_a_waiting_worker() -> None:
    queue: WorkQueue[str] = WorkQueue()
    waiting = asyncio.create_task(queue.get())
    await asyncio.sleep(0.01)
    queue.shut_down()
    with pytest.raises(ShutDown):
        await asyncio.wait_for(waiting, 1.0)


async def test_shut_down_with_drain_waits_for_every_item() -> None:
    queue: WorkQueue[str] = WorkQueue()
    synced: list[str] = []

    async def sync(item: str) -> None:
        await asyncio.sleep(0.02)
        synced.append(item)

    worker = Worker(queue, sync, name="test-worker")
    worker.start()
    for item in "abc":
        queue.add(item)
    await asyncio.wait_for(queue.shut_down_with_drain(), 2.0)
    assert synced == ["a", "b", "c"]
    await asyncio.sleep(0.01)
    assert not worker.running()  # the workers stopped at ShutDown
    await worker.stop()


@pytest.mark.parametrize(("failures", "retried", "calls", "requeues_after"), [
    (0, True, 1, 0),
    (2, True, 3, 0),  # retried until it succeeds, then forgotten
    (2, False, 1, 0),  # a failure not worth retrying is dropped (and forgotten)
])
async def test_worker_retries_what_fails(failures: int, retried: bool, calls: int, requeues_after: int) -> None:
    queue: WorkQueue[str] = WorkQueue(ExponentialBackoff(0.01, 0.01))
    seen: list[str] = []

    async def sync(item: str) -> None:
        seen.append(item)
        if len(seen) <= failures:
            raise RuntimeError("not yet")

    worker = Worker(queue, sync, name="test-worker", retry=lambda item, err: retried)
    queue.add("a")
    await worker.drain()  # the first try, inline
    worker.start()
    try:
        deadline = time.monotonic() + 2.0
        while not queue.idle():
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        assert len(seen) == calls and queue.requeues("a") == requeues_after
    finally:
        await worker.stop()


async def test_no_item_is_worked_on_twice_at_once() -> None:
    queue: WorkQueue[int] = WorkQueue()
    in_hand: set[int] = set()
    overlaps = 0
    done = 0

    async def sync(item: int) -> None:
        nonlocal overlaps, done
        overlaps += item in in_hand
        in_hand.add(item)
        await asyncio.sleep(0.001)
        in_hand.discard(item)
        done += 1

    worker = Worker(queue, sync, name="test-workers", count=4)
    worker.start()
    try:
        for round_ in range(20):
            for item in range(3):
                queue.add(item)
            await asyncio.sleep(0.0005 * (round_ % 3))
        while not queue.idle():
            await asyncio.sleep(0.005)
        assert overlaps == 0 and done >= 3
    finally:
        await worker.stop()
