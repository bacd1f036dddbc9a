"""The CronJob controller (server/controllers/cronjob.py) against a real core, its clock driven by the test: Jobs
at the schedule's times named as kube names them, concurrency policies, suspend, missed times, history limits
and status; and the schedule arithmetic (most recent time, missed count) as kube's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from server.controllers.cronjob import SCHEDULED_TIMESTAMP, CronJobController, most_recent
from server.kinds import cron
from server.runtime.informer import SharedInformers
from tests.server.client import Client, Obj, path

NS = "default"
CRONJOBS = path("cronjobs", NS, group="batch")
JOBS = path("jobs", NS, group="batch")


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
async def clocked(client: Client) -> AsyncIterator[tuple[CronJobController, Clock]]:
    clock = Clock()
    controller = CronJobController(client.running.core, SharedInformers(client.running.core), clock=clock)
    await controller.start()
    try:
        yield controller, clock
    finally:
        await controller.stop()


def cronjob(name: str = "tick", schedule: str = "* * * * *", **spec: Any) -> Obj:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": schedule, "jobTemplate": {"metadata": {"labels": {"from": name}},
                                                           "spec": {"template": template}}, **spec}}


async def until(fetch: Callable[[], Awaitable[Any]], ok: Callable[[Any], bool], timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = await fetch()
        if ok(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"never reached: {got}")
        await asyncio.sleep(0.05)


async def job_names(client: Client) -> list[str]:
    return sorted(await client.names(JOBS))


async def reasons(client: Client, controller: CronJobController, name: str = "tick") -> list[str]:
    await controller.recorder.flush()
    _, items = await client.list(path("events", NS), fieldSelector=f"involvedObject.name={name}")
    return sorted({e["reason"] for e in items})


def minute_after(t: datetime) -> datetime:
    return t.replace(second=0, microsecond=0) + timedelta(minutes=1)


async def tick(controller: CronJobController, clock: Clock, to: datetime) -> None:
    clock.now = to
    controller.resync()
    await asyncio.sleep(0.3)


async def test_a_job_per_schedule_time(client: Client, clocked: tuple[CronJobController, Clock]) -> None:
    controller, clock = clocked
    created = await client.create(CRONJOBS, cronjob())
    start = datetime.fromisoformat(created["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    first = minute_after(start)
    await tick(controller, clock, first + timedelta(seconds=5))
    name = f"tick-{int(first.timestamp()) // 60}"
    assert await until(lambda: job_names(client), lambda names: names == [name]) == [name]
    job = await client.get(path("jobs", NS, name, group="batch"))
    assert job["metadata"]["labels"]["from"] == "tick"
    assert job["metadata"]["annotations"][SCHEDULED_TIMESTAMP] == first.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert job["metadata"]["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "tick",
                                                   "uid": created["metadata"]["uid"], "controller": True,
                                                   "blockOwnerDeletion": True}]
    got = await until(lambda: client.get(path("cronjobs", NS, "tick", group="batch")),
                      lambda cj: bool(cj["status"].get("active")))
    assert got["status"]["lastScheduleTime"] == first.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert [r["name"] for r in got["status"]["active"]] == [name]
    assert got["status"]["active"][0]["uid"] == job["metadata"]["uid"]
    assert await reasons(client, controller) == ["SuccessfulCreate"]


@pytest.mark.parametrize(("policy", "jobs_after", "reason"), [
    ("Allow", 2, "SuccessfulCreate"),
    ("Forbid", 1, "JobAlreadyActive"),
    ("Replace", 1, "SuccessfulDelete"),
])
async def test_concurrency_policy(client: Client, clocked: tuple[CronJobController, Clock], policy: str,
                                  jobs_after: int, reason: str) -> None:
    controller, clock = clocked
    created = await client.create(CRONJOBS, cronjob(concurrencyPolicy=policy))
    first = minute_after(datetime.fromisoformat(created["metadata"]["creationTimestamp"].replace("Z", "+00:00")))
    await tick(controller, clock, first + timedelta(seconds=1))
    await until(lambda: client.get(path("cronjobs", NS, "tick", group="batch")),
                lambda cj: len(cj["status"].get("active") or []) == 1)
    second = first + timedelta(minutes=1)
    await tick(controller, clock, second + timedelta(seconds=1))
    names = await until(lambda: job_names(client), lambda got: len(got) == jobs_after
                        and (policy != "Replace" or got == [f"tick-{int(second.timestamp()) // 60}"]))
    assert len(names) == jobs_after
    assert reason in await reasons(client, controller)
    status = (await client.get(path("cronjobs", NS, "tick", group="batch")))["status"]
    assert len(status["active"]) == jobs_after


async def test_suspended_schedules_nothing(client: Client, clocked: tuple[CronJobController, Clock]) -> None:
    controller, clock = clocked
    created = await client.create(CRONJOBS, cronjob(suspend=True))
    first = minute_after(datetime.fromisoformat(created["metadata"]["creationTimestamp"].replace("Z", "+00:00")))
    await tick(controller, clock, first + timedelta(minutes=3))
    assert await job_names(client) == []


async def test_too_many_missed_times(client: Client, clocked: tuple[CronJobController, Clock]) -> None:
    controller, clock = clocked
    created = await client.create(CRONJOBS, cronjob())
    start = datetime.fromisoformat(created["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    late = minute_after(start) + timedelta(minutes=200)
    await tick(controller, clock, late + timedelta(seconds=2))
    assert await until(lambda: job_names(client), lambda names: len(names) == 1) == [
        f"tick-{int(late.timestamp()) // 60}"]
    assert await reasons(client, controller) == ["SuccessfulCreate", "TooManyMissedTimes"]


async def test_finished_jobs_and_history(client: Client, clocked: tuple[CronJobController, Clock]) -> None:
    """Finished Jobs leave status.active; the oldest beyond successfulJobsHistoryLimit is deleted."""
    controller, clock = clocked
    created = await client.create(CRONJOBS, cronjob(successfulJobsHistoryLimit=1))
    first = minute_after(datetime.fromisoformat(created["metadata"]["creationTimestamp"].replace("Z", "+00:00")))
    for n in range(2):
        await tick(controller, clock, first + timedelta(minutes=n, seconds=1))
        await until(lambda: job_names(client), lambda got, n=n: len(got) == n + 1)  # type: ignore[misc]
    for n, name in enumerate(await job_names(client)):
        job = await client.get(path("jobs", NS, name, group="batch"))
        stamp = f"2024-01-01T00:0{n}:00Z"
        job["status"] = {"startTime": stamp, "completionTime": stamp, "succeeded": 1, "conditions": [
            {"type": "Complete", "status": "True", "lastTransitionTime": stamp}]}
        await client.update(path("jobs", NS, name, group="batch", subresource="status"), job)
    remaining = await until(lambda: job_names(client), lambda got: len(got) == 1)
    assert remaining == [f"tick-{int((first + timedelta(minutes=1)).timestamp()) // 60}"]
    # as kube's syncCronJob: a Job leaves status.active in one sync, and a later sync (the Job no longer active)
    # moves lastSuccessfulTime to its completion
    status = (await until(lambda: client.get(path("cronjobs", NS, "tick", group="batch")),
                          lambda cj: not cj["status"].get("active")
                          and cj["status"].get("lastSuccessfulTime") == "2024-01-01T00:01:00Z"))["status"]
    assert status["lastSuccessfulTime"] == "2024-01-01T00:01:00Z"
    assert {"SawCompletedJob", "SuccessfulDelete"} <= set(await reasons(client, controller))


T0 = datetime(2024, 3, 1, 10, 0, 30, tzinfo=UTC)


@pytest.mark.parametrize(("schedule", "last", "now", "deadline", "recent", "missed"), [
    ("* * * * *", T0, T0 + timedelta(seconds=20), None, None, 0),
    ("* * * * *", T0, T0 + timedelta(seconds=40), None, datetime(2024, 3, 1, 10, 1, tzinfo=UTC), 0),
    ("*/5 * * * *", T0, T0 + timedelta(minutes=12), None, datetime(2024, 3, 1, 10, 10, tzinfo=UTC), 2),
    ("0 * * * *", T0, T0 + timedelta(hours=150), None, datetime(2024, 3, 7, 16, 0, tzinfo=UTC), 150),
    ("* * * * *", T0, T0 + timedelta(minutes=30, seconds=20), 90,
     datetime(2024, 3, 1, 10, 30, tzinfo=UTC), 0),
    ("TZ=Asia/Tokyo 0 9 * * *", T0, T0 + timedelta(days=1), None, datetime(2024, 3, 2, 0, 0, tzinfo=UTC), 0),
])
def test_most_recent_schedule_time(schedule: str, last: datetime, now: datetime, deadline: int | None,
                                   recent: datetime | None, missed: int) -> None:
    obj: Obj = {"metadata": {"creationTimestamp": "2020-01-01T00:00:00Z"},
                "spec": {} if deadline is None else {"startingDeadlineSeconds": deadline},
                "status": {"lastScheduleTime": last.strftime("%Y-%m-%dT%H:%M:%SZ")}}
    _, got, count = most_recent(obj, now, cron.parse(schedule), with_deadline=True)
    assert (got, count) == (recent, missed)


async def test_time_zone_in_the_scheduled_timestamp(client: Client, clocked: tuple[CronJobController, Clock]) -> None:
    controller, clock = clocked
    created = await client.create(CRONJOBS, cronjob(timeZone="Asia/Tokyo"))
    first = minute_after(datetime.fromisoformat(created["metadata"]["creationTimestamp"].replace("Z", "+00:00")))
    await tick(controller, clock, first + timedelta(seconds=1))
    (name,) = await until(lambda: job_names(client), lambda names: len(names) == 1)
    job = await client.get(path("jobs", NS, name, group="batch"))
    tokyo = (first + timedelta(hours=9)).strftime("%Y-%m-%dT%H:%M:%S+09:00")
    assert job["metadata"]["annotations"][SCHEDULED_TIMESTAMP] == tokyo
