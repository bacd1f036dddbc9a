"""Events expire a TTL after their last write (server/controllers/eventttl.py), as kube-apiserver's --event-ttl
makes them: the expirer runs against a real core, its clock driven by the test."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from server.controllers.eventttl import EventExpirer, last_written, singletons
from server.runtime.informer import SharedInformers
from tests.server.client import Client, Failed, Obj, path

NS = "default"
EVENTS = path("events", NS)
TTL = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def expiring(client: Client) -> AsyncIterator[tuple[Client, Clock]]:
    clock = Clock()
    expirer = EventExpirer(client.running.core, SharedInformers(client.running.core), ttl=TTL, clock=clock)
    await expirer.start()
    try:
        yield client, clock
    finally:
        await expirer.stop()


def event(name: str, **more: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": NS}, "reason": "Started",
            "message": "started", "type": "Normal", **more}


def rfc3339(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def exists(client: Client, name: str) -> bool:
    try:
        await client.get(path("events", NS, name))
    except Failed as failed:
        assert failed.status["code"] == 404
        return False
    return True


async def settled(client: Client, name: str, present: bool, timeout: float = 3.0) -> bool:
    """Whether the Event's presence reached `present` within the timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await exists(client, name) == present:
            return True
        await asyncio.sleep(0.02)
    return False


@pytest.mark.parametrize(("age", "kept"), [
    (10.0, True),  # written just now
    (TTL - 60, True),  # not yet a TTL old
    (TTL + 60, False),  # a TTL old: gone
])
async def test_an_event_goes_a_ttl_after_its_last_write(expiring: tuple[Client, Clock], age: float,
                                                        kept: bool) -> None:
    client, clock = expiring
    clock.now = time.time() + age  # the expirer's clock is `age` ahead of the write it is about to see
    await client.create(EVENTS, event("e"))
    assert await settled(client, "e", present=kept)
    if kept:  # and it stays
        await asyncio.sleep(0.3)
        assert await exists(client, "e")


async def test_an_event_written_again_is_judged_by_its_new_write(expiring: tuple[Client, Clock]) -> None:
    client, clock = expiring
    created = await client.create(EVENTS, event("e", lastTimestamp=rfc3339(time.time())))
    clock.now = time.time() + TTL - 1  # just short of its TTL
    created["count"] = 2
    created["lastTimestamp"] = rfc3339(time.time() + TTL - 1)  # the recorder's repeat, written at the new time
    await client.update(path("events", NS, "e"), created)
    clock.now = time.time() + TTL + 5  # a TTL after its first write, not after its last
    await client.create(EVENTS, event("other"))
    assert await settled(client, "other", present=False)  # written a TTL before the expirer's now: gone
    await asyncio.sleep(1.5)  # judged by its first write, it would be due a second after its second
    assert await exists(client, "e")


def test_the_last_write_is_the_latest_time_the_event_tells() -> None:
    assert last_written({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [
        {"time": "2026-01-01T01:00:00Z"}, {"time": "2026-01-01T00:30:00Z"}]}, "lastTimestamp": "2026-01-01T00:10:00Z",
    }) == datetime(2026, 1, 1, 1, tzinfo=UTC).timestamp()
    assert last_written({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
                         "series": {"lastObservedTime": "2026-01-01T02:00:00.000000Z"}}) == datetime(
        2026, 1, 1, 2, tzinfo=UTC).timestamp()
    assert last_written({"metadata": {}}) is None


@pytest.mark.parametrize(("ttl", "count"), [(0.0, 0), (-1.0, 0), (60.0, 1)])
def test_a_ttl_of_zero_keeps_events_for_ever(client: Client, ttl: float, count: int) -> None:
    assert len(singletons(client.running.core, None, ttl)) == count
