"""The Job controller (server/controllers/job.py) against a real core: a test kubelet runs each Pod to the exit
code the case says, and the Job's Pods, status, conditions and events are kube 1.28's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from server.controllers.job import (
    COMPLETION_INDEX,
    TRACKING_FINALIZER,
    BackoffRecord,
    JobController,
    format_indexes,
    next_backoff,
    parse_indexes,
)
from server.runtime.informer import SharedInformers
from tests.server.client import Client, Obj, path
from tests.server.controllers.batchkubelet import JobKubelet, Outcome, report

NS = "default"
JOBS = path("jobs", NS, group="batch")
PODS = path("pods", NS)


@pytest.fixture
async def jobs(client: Client) -> AsyncIterator[JobController]:
    controller = JobController(client.running.core, SharedInformers(client.running.core), pod_backoff=0.05,
                               max_pod_backoff=0.2)
    await controller.start()
    try:
        yield controller
    finally:
        await controller.stop()


def job(name: str = "pi", **spec: Any) -> Obj:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": template, **spec}}


async def until(fetch: Callable[[], Awaitable[Any]], ok: Callable[[Any], bool], timeout: float = 8.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = await fetch()
        if ok(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"never reached: {got}")
        await asyncio.sleep(0.05)


def condition(obj: Obj, kind: str) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


def finished(obj: Obj) -> bool:
    return any(condition(obj, k) and condition(obj, k)["status"] == "True" for k in ("Complete", "Failed"))  # type: ignore[index]


async def reasons(client: Client, name: str) -> list[str]:
    _, items = await client.list(path("events", NS), fieldSelector=f"involvedObject.name={name}")
    return sorted({e["reason"] for e in items})


def succeed(pod: Obj, n: int) -> int | None:
    return 0


def fail(pod: Obj, n: int) -> int | None:
    return 1


def fail_then_succeed(pod: Obj, n: int) -> int | None:
    return 3 if n == 0 else 0


def exit_42(pod: Obj, n: int) -> int | None:
    return 42


def run(pod: Obj, n: int) -> int | None:
    return None


FAIL_ON_42 = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}
IGNORE_3 = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}]}

CASES = [
    pytest.param({"completions": 3, "parallelism": 2}, succeed,
                 {"succeeded": 3, "failed": 0, "active": 0}, ("Complete", ""), 3,
                 ["Completed", "SuccessfulCreate"], id="completions"),
    pytest.param({"parallelism": 2}, succeed,
                 {"succeeded": 2, "active": 0}, ("Complete", ""), 2, ["Completed", "SuccessfulCreate"],
                 id="work-queue-parallelism"),
    pytest.param({"completions": 3, "parallelism": 3, "completionMode": "Indexed"}, succeed,
                 {"succeeded": 3, "completedIndexes": "0-2", "active": 0}, ("Complete", ""), 3,
                 ["Completed", "SuccessfulCreate"], id="indexed"),
    pytest.param({"backoffLimit": 1}, fail,
                 {"failed": 2, "succeeded": 0, "active": 0}, ("Failed", "BackoffLimitExceeded"), 2,
                 ["BackoffLimitExceeded", "SuccessfulCreate"], id="backoff-limit"),
    pytest.param({"backoffLimit": 2}, fail_then_succeed,
                 {"failed": 1, "succeeded": 1}, ("Complete", ""), 2, ["Completed", "SuccessfulCreate"],
                 id="retried-after-backoff"),
    pytest.param({"backoffLimit": 6, "podFailurePolicy": FAIL_ON_42}, exit_42,
                 {"failed": 1, "active": 0}, ("Failed", "PodFailurePolicy"), 1,
                 ["PodFailurePolicy", "SuccessfulCreate"], id="pod-failure-policy-fail-job"),
    pytest.param({"backoffLimit": 0, "podFailurePolicy": IGNORE_3}, fail_then_succeed,
                 {"failed": 0, "succeeded": 1}, ("Complete", ""), 2, ["Completed", "SuccessfulCreate"],
                 id="pod-failure-policy-ignore"),
    pytest.param({"activeDeadlineSeconds": 1, "parallelism": 2, "completions": 4}, run,
                 {"failed": 2, "active": 0}, ("Failed", "DeadlineExceeded"), 2,
                 ["DeadlineExceeded", "SuccessfulCreate", "SuccessfulDelete"], id="active-deadline"),
]


@pytest.mark.parametrize(("spec", "outcome", "want", "condition_and_reason", "pods", "events"), CASES)
async def test_job_runs_to_its_end(client: Client, jobs: JobController, spec: Obj, outcome: Outcome, want: Obj,
                                   condition_and_reason: tuple[str, str], pods: int, events: list[str]) -> None:
    async with JobKubelet(client, NS, outcome) as kubelet:
        await client.create(JOBS, job(**spec))
        done = await until(lambda: client.get(path("jobs", NS, "pi", group="batch")), finished)
    status = done["status"]
    assert {k: status.get(k, 0) for k in want} == want
    kind, reason = condition_and_reason
    got = condition(done, kind)
    assert got is not None and got["status"] == "True" and got.get("reason", "") == reason
    if kind == "Complete":
        assert status["completionTime"] >= status["startTime"]
    if reason == "PodFailurePolicy":
        target = condition(done, "FailureTarget")
        assert target is not None and target["reason"] == "PodFailurePolicy"
        assert got["message"] == (f"Container main for pod {NS}/{kubelet.seen[0]} failed with exit code 42 "
                                  f"matching FailJob rule at index 0")
    assert status.get("uncountedTerminatedPods", {}) == {}
    assert len(kubelet.seen) == pods
    # every Pod loses the tracking finalizer once counted
    _, left = await client.list(PODS)
    assert all(TRACKING_FINALIZER not in (p["metadata"].get("finalizers") or []) for p in left)
    await jobs.recorder.flush()
    assert await reasons(client, "pi") == events


async def test_indexed_pods_carry_their_index(client: Client, jobs: JobController) -> None:
    created = await client.create(JOBS, job("idx", completions=2, parallelism=2, completionMode="Indexed"))
    _, items = await until(lambda: client.list(PODS), lambda got: len(got[1]) == 2)
    by_index = {p["metadata"]["annotations"][COMPLETION_INDEX]: p for p in items}
    assert sorted(by_index) == ["0", "1"]
    for index, pod in by_index.items():
        assert pod["metadata"]["labels"][COMPLETION_INDEX] == index
        assert pod["metadata"]["generateName"] == f"idx-{index}-"
        assert pod["spec"]["hostname"] == f"idx-{index}"
        assert pod["metadata"]["finalizers"] == [TRACKING_FINALIZER]
        assert pod["metadata"]["ownerReferences"] == [{
            "apiVersion": "batch/v1", "kind": "Job", "name": "idx", "uid": created["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
        assert {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}}} in \
            pod["spec"]["containers"][0]["env"]
    got = await until(lambda: client.get(path("jobs", NS, "idx", group="batch")),
                      lambda j: j["status"].get("active") == 2)
    assert got["status"]["ready"] == 0


async def test_suspend_and_resume(client: Client, jobs: JobController) -> None:
    at = path("jobs", NS, "pi", group="batch")
    await client.create(JOBS, job(parallelism=2, completions=2, suspend=True))
    suspended = await until(lambda: client.get(at), lambda j: condition(j, "Suspended") is not None)
    assert condition(suspended, "Suspended")["reason"] == "JobSuspended"  # type: ignore[index]
    assert "startTime" not in suspended["status"] and (await client.list(PODS))[1] == []
    suspended["spec"]["suspend"] = False
    await client.update(at, suspended)
    resumed = await until(lambda: client.get(at), lambda j: j["status"].get("active") == 2)
    assert condition(resumed, "Suspended")["status"] == "False"  # type: ignore[index]
    assert condition(resumed, "Suspended")["reason"] == "JobResumed"  # type: ignore[index]
    assert resumed["status"]["startTime"]
    resumed["spec"]["suspend"] = True
    await client.update(at, resumed)
    again = await until(lambda: client.get(at), lambda j: j["status"].get("active", 0) == 0)
    assert condition(again, "Suspended")["status"] == "True"  # type: ignore[index]
    await jobs.recorder.flush()
    assert await reasons(client, "pi") == ["Resumed", "SuccessfulCreate", "SuccessfulDelete", "Suspended"]


async def test_orphan_pods_are_adopted(client: Client, jobs: JobController) -> None:
    """A Pod its selector matches, owned by no controller, becomes the Job's and counts as active."""
    await client.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray",
                                                                               "labels": {"app": "x"}},
                               "spec": {"containers": [{"name": "main", "image": "busybox"}]}})
    body = job(parallelism=1, completions=1, manualSelector=True, selector={"matchLabels": {"app": "x"}})
    body["spec"]["template"]["metadata"] = {"labels": {"app": "x"}}
    created = await client.create(JOBS, body)
    pod = await until(lambda: client.get(path("pods", NS, "stray")),
                      lambda p: bool(p["metadata"].get("ownerReferences")))
    assert pod["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    got = await until(lambda: client.get(path("jobs", NS, "pi", group="batch")),
                      lambda j: j["status"].get("active") == 1)
    assert got["status"]["active"] == 1 and await client.names(PODS) == ["stray"]


@pytest.mark.parametrize(("text", "completions", "indexes", "printed"), [
    ("", 3, set(), ""),
    ("0-2", 3, {0, 1, 2}, "0-2"),
    ("1,3-5,7", 7, {1, 3, 4, 5}, "1,3-5"),
    ("0,2", 5, {0, 2}, "0,2"),
])
def test_completed_indexes(text: str, completions: int, indexes: set[int], printed: str) -> None:
    assert parse_indexes(text, completions) == indexes
    assert format_indexes(indexes) == printed


def finished_pod(phase: str, at: str) -> Obj:
    return {"status": {"phase": phase, "containerStatuses": [{"state": {"terminated": {"finishedAt": at}}}]}}


@pytest.mark.parametrize(("record", "succeeded", "failed", "want"), [
    (BackoffRecord(), [], [], BackoffRecord()),
    (BackoffRecord(), [], ["2024-01-01T00:00:10Z", "2024-01-01T00:00:05Z"], BackoffRecord(2, 1704067210.0)),
    (BackoffRecord(2, 1.0), ["2024-01-01T00:00:20Z"], [], BackoffRecord()),
    (BackoffRecord(2, 1.0), ["2024-01-01T00:00:20Z"], ["2024-01-01T00:00:10Z", "2024-01-01T00:00:30Z"],
     BackoffRecord(1, 1704067230.0)),
])
def test_backoff_record(record: BackoffRecord, succeeded: list[str], failed: list[str], want: BackoffRecord) -> None:
    """newBackoffRecord: failures after the last success, the last failure's finish time."""
    got = next_backoff(record, [finished_pod("Succeeded", t) for t in succeeded],
                       [finished_pod("Failed", t) for t in failed], 0.0)
    assert got == want


@pytest.mark.parametrize(("failures", "elapsed", "remaining"), [
    (0, 0.0, 0.0),
    (1, 0.0, 10.0),
    (1, 4.0, 6.0),
    (3, 0.0, 40.0),
    (3, 50.0, 0.0),
    (10, 0.0, 360.0),  # capped at 6 minutes
])
def test_backoff_remaining(failures: int, elapsed: float, remaining: float) -> None:
    """getRemainingTime: 10 s doubled per failure after the first, at most 6 minutes, less the time since."""
    assert BackoffRecord(failures, 100.0).remaining(100.0 + elapsed, 10.0, 360.0) == remaining


@pytest.mark.parametrize("propagation", ["Orphan", "Background"])
async def test_pods_of_a_deleted_job_lose_the_finalizer(client: Client, jobs: JobController,
                                                        propagation: str) -> None:
    """Orphaned (the Job deleted with Orphan) or left to the garbage collector (Background): no Pod stays
    blocked by the tracking finalizer."""
    await client.create(JOBS, job(parallelism=2, completions=2))
    await until(lambda: client.list(PODS), lambda got: len(got[1]) == 2)
    await client.delete(path("jobs", NS, "pi", group="batch"), propagationPolicy=propagation)

    def released(got: tuple[Obj, list[Obj]]) -> bool:
        return all(TRACKING_FINALIZER not in (p["metadata"].get("finalizers") or []) for p in got[1])

    _, left = await until(lambda: client.list(PODS), released)
    if propagation == "Orphan":
        assert len(left) == 2 and all(not p["metadata"].get("ownerReferences") for p in left)
    else:
        await until(lambda: client.list(PODS), lambda got: got[1] == [])


async def test_restarts_count_against_the_backoff_limit_on_failure(client: Client, jobs: JobController) -> None:
    """restartPolicy OnFailure: the kubelet restarts containers in place; their restarts reaching backoffLimit
    fail the Job (pastBackoffLimitOnFailure) and its running Pod is deleted."""
    body = job(backoffLimit=2)
    body["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    async with JobKubelet(client, NS, run) as kubelet:
        await client.create(JOBS, body)
        await until(lambda: client.get(path("jobs", NS, "pi", group="batch")),
                    lambda j: j["status"].get("active") == 1 and len(kubelet.seen) == 1)
        name = kubelet.seen[0]
        pod = await until(lambda: client.get(path("pods", NS, name)), lambda p: p["status"].get("phase") == "Running")
    pod["status"]["containerStatuses"][0]["restartCount"] = 2
    await client.update(path("pods", NS, name, subresource="status"), pod)
    done = await until(lambda: client.get(path("jobs", NS, "pi", group="batch")), finished)
    failed = condition(done, "Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert failed["message"] == "Job has reached the specified backoff limit"
    assert done["status"].get("active", 0) == 0 and done["status"]["failed"] == 1


async def test_disruption_target_ignored_by_the_pod_failure_policy(client: Client, jobs: JobController) -> None:
    """A Pod failed with the DisruptionTarget condition (evicted, preempted) matches an Ignore rule on Pod
    conditions: not counted against backoffLimit 0, and replaced."""
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    async with JobKubelet(client, NS, run) as kubelet:
        await client.create(JOBS, job(backoffLimit=0, podFailurePolicy=policy))
        first = (await until(lambda: client.list(PODS), lambda got: len(got[1]) == 1))[1][0]["metadata"]["name"]
        await until(lambda: client.get(path("pods", NS, first)), lambda p: p["status"].get("phase") == "Running")
        disrupted = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                     "lastTransitionTime": "2024-01-01T00:00:00Z"}
        await report(client, NS, first, 137, conditions=[disrupted])
        await until(lambda: client.list(PODS), lambda got: len(got[1]) >= 1 and len(kubelet.seen) == 2)
        second = kubelet.seen[1]
        await until(lambda: client.get(path("pods", NS, second)), lambda p: p["status"].get("phase") == "Running")
        await report(client, NS, second, 0)
        done = await until(lambda: client.get(path("jobs", NS, "pi", group="batch")), finished)
    assert condition(done, "Complete") is not None
    assert done["status"].get("failed", 0) == 0 and done["status"]["succeeded"] == 1
