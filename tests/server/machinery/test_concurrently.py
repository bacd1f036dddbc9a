"""server/machinery/concurrently.py: independent calls awaited together, the first failure raised as it is."""

from __future__ import annotations

import asyncio

import pytest

from server.machinery import errors
from server.machinery.concurrently import each


async def _record(done: list[str], name: str, delay: float, error: Exception | None) -> None:
    await asyncio.sleep(delay)
    if error is not None:
        raise error
    done.append(name)


CONFLICT = errors.ApiError(errors.status(409, "AlreadyExists", "taken"))


@pytest.mark.parametrize(("calls", "raised", "finished"), [
    ([("a", 0.0, None), ("b", 0.0, None), ("c", 0.0, None)], None, {"a", "b", "c"}),
    ([], None, set()),
    # the failure itself, not an ExceptionGroup: callers keep catching what the sequential loop raised
    ([("a", 0.0, None), ("b", 0.0, CONFLICT)], CONFLICT, {"a"}),
    ([("slow", 1.0, None), ("b", 0.0, OSError("disk"))], OSError, set()),  # the others are cancelled
])
async def test_each(calls: list[tuple[str, float, Exception | None]], raised: object, finished: set[str]) -> None:
    done: list[str] = []
    coroutines = [_record(done, name, delay, error) for name, delay, error in calls]
    if raised is None:
        await each(coroutines)
    else:
        with pytest.raises(Exception) as caught:
            await each(coroutines)
        assert caught.value is raised or type(caught.value) is raised
    await asyncio.sleep(0)
    assert set(done) == finished
