"""server/machinery/deadline.py: a request's deadline bound for its call-outs, and the cut that ends a block at
its deadline as asyncio.timeout does, on one timer per loop. Run on asyncio's own loop and on uvloop, the
serving loop."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop

from server.machinery import deadline

LOOPS = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


def run(make_loop: str, main: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    loop = LOOPS[make_loop]()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


async def _cut_then(seconds: float, work: float) -> str:
    """What a block of `work` seconds under a cut of `seconds` ends with; afterwards the task must be free to
    await again (no cancellation left pending by the cut)."""
    try:
        with deadline.cut(seconds):
            await asyncio.sleep(work)
        outcome = "done"
    except TimeoutError:
        outcome = "timed out"
    await asyncio.sleep(0.01)
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
    return outcome


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize(("seconds", "work", "outcome"), [
    (5.0, 0.0, "done"),
    (5.0, 0.02, "done"),
    (0.05, 5.0, "timed out"),
    (0.0, 5.0, "timed out"),  # a deadline already reached cuts at the next await
])
def test_a_cut_ends_a_block_that_outlives_it(loop: str, seconds: float, work: float, outcome: str) -> None:
    started = time.monotonic()
    assert run(loop, lambda: _cut_then(seconds, work)) == outcome
    elapsed = time.monotonic() - started
    if outcome == "timed out":
        assert seconds <= elapsed + 0.002 < work  # at its deadline, not at the work's end


async def _cuts_in_one_loop(deadlines: list[float]) -> list[int]:
    """Tasks under cuts of the given seconds, entered in that order; the order they time out in."""
    order: list[int] = []

    async def one(index: int, seconds: float) -> None:
        with pytest.raises(TimeoutError), deadline.cut(seconds):
            await asyncio.sleep(5)
        order.append(index)

    await asyncio.gather(*(one(i, s) for i, s in enumerate(deadlines)))
    return order


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize(("deadlines", "order"), [
    ([0.05, 0.1, 0.15], [0, 1, 2]),
    ([0.15, 0.1, 0.05], [2, 1, 0]),  # each sooner cut re-arms the loop's one timer
    ([0.15, 0.05, 0.1], [1, 2, 0]),
])
def test_each_cut_fires_at_its_own_deadline(loop: str, deadlines: list[float], order: list[int]) -> None:
    assert run(loop, lambda: _cuts_in_one_loop(deadlines)) == order


async def _one_after_another(blocks: list[tuple[float, float]]) -> list[str]:
    return [await _cut_then(seconds, work) for seconds, work in blocks]


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize(("blocks", "outcomes"), [
    # a long cut that left keeps its timer armed; a later, sooner cut still fires on time
    ([(5.0, 0.0), (0.05, 0.5), (5.0, 0.0)], ["done", "timed out", "done"]),
    ([(0.05, 0.0), (0.2, 0.01), (0.05, 0.5)], ["done", "done", "timed out"]),
    ([(0.05, 0.5), (0.05, 0.5)], ["timed out", "timed out"]),
])
def test_cuts_one_after_another(loop: str, blocks: list[tuple[float, float]], outcomes: list[str]) -> None:
    assert run(loop, lambda: _one_after_another(blocks)) == outcomes


async def _cuts_after_a_stall(deadlines: list[float]) -> list[int]:
    """As _cuts_in_one_loop, but the loop is held past every deadline before any fires: one sweep then finds
    them all due, and fires them in deadline order, as a loop runs its timers."""
    order: list[int] = []

    async def one(index: int, seconds: float) -> None:
        with pytest.raises(TimeoutError), deadline.cut(seconds):
            await asyncio.sleep(5)
        order.append(index)

    tasks = [asyncio.ensure_future(one(i, s)) for i, s in enumerate(deadlines)]
    await asyncio.sleep(0)  # every task inside its cut
    time.sleep(max(deadlines) + 0.05)  # the stall is the point: the loop held, blocking
    await asyncio.gather(*tasks)
    return order


@pytest.mark.parametrize("loop", sorted(LOOPS))
# Deadlines 100 ms apart: each task reads the clock as it enters its cut, and on a loaded machine consecutive
# tasks of one loop pass can start milliseconds apart.
@pytest.mark.parametrize(("deadlines", "order"), [
    ([0.3, 0.2, 0.1], [2, 1, 0]),
    ([0.2, 0.3, 0.1], [2, 0, 1]),
])
def test_cuts_due_together_fire_in_deadline_order(loop: str, deadlines: list[float], order: list[int]) -> None:
    assert run(loop, lambda: _cuts_after_a_stall(deadlines)) == order


async def _nested(outer: float, inner: float) -> str:
    try:
        with deadline.cut(outer):
            try:
                with deadline.cut(inner):
                    await asyncio.sleep(1)
            except TimeoutError:
                return "inner timed out"
    except TimeoutError:
        return "outer timed out"
    return "done"


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize(("outer", "inner", "outcome"), [
    (5.0, 0.05, "inner timed out"),
    (0.05, 5.0, "outer timed out"),  # the inner cut did not fire: the cancellation passes it to the outer one
])
def test_nested_cuts_each_answer_for_their_own_deadline(loop: str, outer: float, inner: float, outcome: str) -> None:
    assert run(loop, lambda: _nested(outer, inner)) == outcome


async def _cancelled_meanwhile(cancel_after: float, seconds: float) -> str:
    async def body() -> str:
        with deadline.cut(seconds):
            await asyncio.sleep(1)
        return "done"

    task = asyncio.ensure_future(body())
    await asyncio.sleep(cancel_after)
    task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        return "cancelled"
    except TimeoutError:
        return "timed out"


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize(("cancel_after", "seconds", "outcome"), [
    (0.02, 5.0, "cancelled"),  # a cancellation from elsewhere stays one
    (0.1, 0.02, "timed out"),  # the cut came first
])
def test_a_cancellation_from_elsewhere_is_not_a_timeout(loop: str, cancel_after: float, seconds: float,
                                                         outcome: str) -> None:
    assert run(loop, lambda: _cancelled_meanwhile(cancel_after, seconds)) == outcome


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_within_binds_the_deadline_that_remains(loop: str) -> None:
    async def main() -> tuple[float | None, float | None, float | None, float | None]:
        before = deadline.remaining()
        with deadline.within(10.0):
            outer = deadline.remaining()
            with deadline.within(60.0):  # an earlier deadline already bound is kept
                kept = deadline.remaining()
        with deadline.within(None):
            unbound = deadline.remaining()
        return before, outer, kept, unbound

    before, outer, kept, unbound = run(loop, main)
    assert before is None and unbound is None
    assert outer is not None and kept is not None and 9.0 < kept <= outer <= 10.0


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_a_loop_that_used_cuts_is_not_kept_alive(loop: str) -> None:
    made = LOOPS[loop]()
    made.run_until_complete(_cut_then(5.0, 0.0))
    made.close()
    gone = weakref.ref(made)
    del made
    run(loop, lambda: _cut_then(5.0, 0.0))  # another loop's cuts take the module's place
    gc.collect()
    assert gone() is None
