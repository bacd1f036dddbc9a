"""Writers of one key take turns (server/objects/keygate.py): one holder at a time, first come first served,
a bounded wait, cancellation that never loses or leaks a turn, and nothing held once every writer has left."""

from __future__ import annotations

import asyncio

import pytest

from server.objects.keygate import KeyGate

A, B = b"/a", b"/b"


async def writer(gate: KeyGate, key: bytes, name: str, log: list[str], hold: float = 0.01) -> bool:
    held = await gate.enter(key)
    log.append(f"{name} in")
    await asyncio.sleep(hold)
    log.append(f"{name} out")
    if held:
        gate.leave(key)
    return held


async def test_writers_of_one_key_take_turns_in_order() -> None:
    gate, log = KeyGate(max_wait=5), list[str]()
    held = await asyncio.gather(*(writer(gate, A, str(i), log) for i in range(4)))
    assert list(held) == [True] * 4
    assert log == [f"{i} {step}" for i in range(4) for step in ("in", "out")]  # one at a time, first come first
    assert len(gate) == 0


async def test_writers_of_other_keys_do_not_wait() -> None:
    gate, log = KeyGate(max_wait=5), list[str]()
    await asyncio.gather(writer(gate, A, "a", log, hold=0.05), writer(gate, B, "b", log, hold=0.0))
    assert log[:3] == ["a in", "b in", "b out"]
    assert len(gate) == 0


async def test_a_writer_waits_at_most_max_wait_then_goes_without_a_turn() -> None:
    gate, log = KeyGate(max_wait=0.05), list[str]()
    held = await asyncio.gather(writer(gate, A, "slow", log, hold=0.3), writer(gate, A, "impatient", log))
    assert list(held) == [True, False]
    assert log[:3] == ["slow in", "impatient in", "impatient out"]
    assert len(gate) == 0


@pytest.mark.parametrize("when", ["waiting", "as its turn comes"])
async def test_a_cancelled_waiter_never_keeps_the_turn(when: str) -> None:
    gate, log = KeyGate(max_wait=5), list[str]()
    assert await gate.enter(A)
    cancelled = asyncio.ensure_future(gate.enter(A))
    after = asyncio.ensure_future(writer(gate, A, "after", log))
    await asyncio.sleep(0)
    if when == "as its turn comes":
        gate.leave(A)  # the turn is handed to `cancelled`, which is cancelled before it runs
        cancelled.cancel()
    else:
        cancelled.cancel()
        await asyncio.sleep(0)
        gate.leave(A)
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert await asyncio.wait_for(after, 1) is True  # the turn went on to the next writer
    assert len(gate) == 0
