"""The TTL-after-finished controller (server/controllers/ttlafterfinished.py) against a real core, its clock
driven by the test: a finished Job goes ttlSecondsAfterFinished after its finish, in the foreground."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from server.controllers.ttlafterfinished import TTLAfterFinishedController, expires_in
from server.runtime.informer import SharedInformers
from tests.server.client import Client, Failed, Obj, path

NS = "default"
JOBS = path("jobs", NS, group="batch")
FINISHED_AT = "2024-01-01T00:00:00Z"
FINISHED = 1704067200.0  # FINISHED_AT in Unix seconds


class Clock:
    def __init__(self) -> None:
        self.now = FINISHED

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def ttl(client: Client) -> AsyncIterator[tuple[TTLAfterFinishedController, Clock]]:
    clock = Clock()
    controller = TTLAfterFinishedController(client.running.core, SharedInformers(client.running.core), clock=clock)
    await controller.start()
    try:
        yield controller, clock
    finally:
        await controller.stop()


def job(ttl_seconds: int | None) -> Obj:
    spec: Obj = {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "busybox"}]}}}
    if ttl_seconds is not None:
        spec["ttlSecondsAfterFinished"] = ttl_seconds
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "done"}, "spec": spec}


async def exists(client: Client) -> bool:
    try:
        await client.get(path("jobs", NS, "done", group="batch"))
    except Failed as failed:
        assert failed.status["code"] == 404
        return False
    return True


@pytest.mark.parametrize(("ttl_seconds", "condition", "elapsed", "deleted"), [
    (0, "Complete", 0, True),
    (0, "Failed", 0, True),
    (60, "Complete", 30, False),
    (60, "Complete", 61, True),
    (None, "Complete", 1000, False),
    (0, None, 1000, False),
])
async def test_finished_jobs_go_when_due(client: Client, ttl: tuple[TTLAfterFinishedController, Clock],
                                         ttl_seconds: int | None, condition: str | None, elapsed: float,
                                         deleted: bool) -> None:
    _, clock = ttl
    clock.now = FINISHED + elapsed
    created = await client.create(JOBS, job(ttl_seconds))
    if condition is not None:
        created["status"] = {"startTime": FINISHED_AT, "conditions": [
            {"type": condition, "status": "True", "lastTransitionTime": FINISHED_AT}]}
        if condition == "Complete":
            created["status"]["completionTime"] = FINISHED_AT
        await client.update(path("jobs", NS, "done", group="batch", subresource="status"), created)
    deadline = time.monotonic() + (5.0 if deleted else 0.5)
    while await exists(client) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert (not await exists(client)) == deleted


async def test_a_job_not_due_is_deleted_once_due(client: Client,
                                                 ttl: tuple[TTLAfterFinishedController, Clock]) -> None:
    _, clock = ttl
    created = await client.create(JOBS, job(1))
    clock.now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock.now))
    created["status"] = {"startTime": stamp, "completionTime": stamp, "conditions": [
        {"type": "Complete", "status": "True", "lastTransitionTime": stamp}]}
    await client.update(path("jobs", NS, "done", group="batch", subresource="status"), created)
    await asyncio.sleep(0.2)
    assert await exists(client)
    clock.now += 2  # the controller's own timer wakes it within the TTL; the clock says it is due by then
    deadline = time.monotonic() + 5.0
    while await exists(client) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not await exists(client)


@pytest.mark.parametrize(("obj", "left"), [
    ({"spec": {"ttlSecondsAfterFinished": 10}, "status": {"conditions": [
        {"type": "Complete", "status": "True", "lastTransitionTime": FINISHED_AT}]}}, 5.0),
    ({"spec": {"ttlSecondsAfterFinished": 10}, "status": {}}, None),
    ({"metadata": {"deletionTimestamp": FINISHED_AT}, "spec": {"ttlSecondsAfterFinished": 10}}, None),
])
def test_expires_in(obj: Obj, left: float | None) -> None:
    assert expires_in(obj, FINISHED + 5) == left
