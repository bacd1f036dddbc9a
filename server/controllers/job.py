"""The Job controller, as kube-controller-manager 1.28's (pkg/controller/job): Pods for a Job's completions,
tracked with finalizers, and the Job's status.

Contracts, as kube's:
- Pods are made from the template with the `batch.kubernetes.io/job-tracking` finalizer and a controller
  ownerReference, named `<job>-` (NonIndexed) or `<job>-<index>-` (Indexed, with the completion index as the
  `batch.kubernetes.io/job-completion-index` annotation and label, hostname `<job>-<index>`, and the
  JOB_COMPLETION_INDEX env var read from the annotation); orphans matching the selector are adopted;
- active Pods (not terminal, not being deleted) are kept at min(parallelism, completions - succeeded); with no
  completions, at parallelism until one succeeds; excess Pods are deleted (unready and newest first); a
  suspended Job has none (condition Suspended True/JobSuspended, event Suspended; resuming sets Suspended
  False/JobResumed, event Resumed, and restarts startTime);
- finished Pods are counted once: their uids go to status.uncountedTerminatedPods, their finalizers are removed,
  then they move into status.succeeded / status.failed (Indexed: completedIndexes as "0-2,4"); a Pod being
  deleted before it succeeded counts as failed (unless a podFailurePolicy waits for its phase);
- replacements for failed Pods wait kube's backoff: `pod_backoff` seconds (10) doubled per failure since the
  last success, at most `max_pod_backoff` (6 minutes), from the last failure's finish time;
- the Job fails with Failed/BackoffLimitExceeded when failed > backoffLimit (or, for restartPolicy OnFailure,
  the active Pods' restarts reach it), Failed/DeadlineExceeded past activeDeadlineSeconds from startTime, and
  through FailureTarget then Failed/PodFailurePolicy when a FailJob rule matches a failed Pod (Ignore rules
  leave the failure uncounted); its active Pods are deleted first; it completes (Complete, completionTime,
  event Completed) once succeeded reaches completions (or, without completions, one succeeded and none is
  active). Events: SuccessfulCreate, SuccessfulDelete, Completed, and the failure's reason as a Warning;
- a Pod with the tracking finalizer that no Job of its own controls (its Job deleted, an orphan) loses the
  finalizer (syncOrphanPod), queued under the key (namespace, "pod/<name>");
- Pods are created in slow-start batches (1, 2, 4, ..., at most 500 per sync); a failed batch ends the sync's
  creates, the ones never attempted no longer awaited;
- at most 500 finished Pods are taken into uncountedTerminatedPods per sync (MaxUncountedPods).
Not done: backoffLimitPerIndex and podReplacementPolicy (alpha in 1.28).
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from server.controllers.workload.events import NORMAL, WARNING, EventRecorder
from server.controllers.workload.expectations import Expectations
from server.controllers.workload.keyed import Key, KeyedController, Obj, key_of, path
from server.controllers.workload.pods import (
    PodControl,
    controller_of,
    controller_ref,
    is_pod_ready,
    parse_time,
)
from server.controllers.workload.refs import ControllerRefManager
from server.machinery import errors
from server.machinery.selectors import labels as label_selectors
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

JOBS = path("jobs", group="batch")
PODS = path("pods")
API_VERSION, KIND = "batch/v1", "Job"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
DEFAULT_BACKOFF = 10.0  # DefaultJobBackOff
MAX_BACKOFF = 360.0  # MaxJobBackOff
MAX_PER_SYNC = 500  # MaxPodCreateDeletePerSync
MAX_UNCOUNTED = 500  # MaxUncountedPods: finished Pods taken into uncountedTerminatedPods per sync
SLOW_START_INITIAL_BATCH = 1  # SlowStartInitialBatchSize: creates go in batches of 1, 2, 4, ...
COMPLETE, FAILED, FAILURE_TARGET, SUSPENDED = "Complete", "Failed", "FailureTarget", "Suspended"
BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
DEADLINE_EXCEEDED = "DeadlineExceeded"
POD_FAILURE_POLICY = "PodFailurePolicy"
ORPHAN = "pod/"  # a queue key (namespace, "pod/<name>"): an orphan Pod's finalizer (Job names have no "/")


def rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition_of(job: Obj, kind: str) -> Obj | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def finished(job: Obj) -> str:
    """IsJobFinished: "Complete" or "Failed" when that condition is True, else ""."""
    for kind in (COMPLETE, FAILED):
        c = condition_of(job, kind)
        if c is not None and c.get("status") == "True":
            return kind
    return ""


def _meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _uid(obj: Obj) -> str:
    return str(_meta(obj).get("uid", ""))


def has_finalizer(pod: Obj) -> bool:
    return TRACKING_FINALIZER in (_meta(pod).get("finalizers") or [])


def completion_index(pod: Obj) -> int | None:
    """getCompletionIndex: the annotation as a non-negative int, else None."""
    value = (_meta(pod).get("annotations") or {}).get(COMPLETION_INDEX)
    if not isinstance(value, str) or not value.isdigit():
        return None
    return int(value)


# -- completed indexes as kube prints them ("1,3-5") ---------------------------------------------------------------


def parse_indexes(text: str, completions: int) -> set[int]:
    """parseIndexesFromString: the indexes below `completions`; malformed parts are skipped."""
    out: set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            continue
        out.update(i for i in range(first, last + 1) if 0 <= i < completions)
    return out


def format_indexes(indexes: Iterable[int]) -> str:
    parts: list[str] = []
    ordered = sorted(set(indexes))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


# -- pod failure policy ----------------------------------------------------------------------------------------------


def _terminated_matching(statuses: Sequence[Obj], requirement: Obj) -> Obj | None:
    """getMatchingContainerFromList: a terminated container (of the named one, if named) whose non-zero exit
    code the requirement's operator matches."""
    name, values = requirement.get("containerName"), requirement.get("values") or []
    for status in statuses:
        terminated = (status.get("state") or {}).get("terminated")
        if not isinstance(terminated, dict) or (name and status.get("name") != name):
            continue
        code = int(terminated.get("exitCode") or 0)
        if code == 0:
            continue
        if (requirement.get("operator") == "In") == (code in values):
            return status
    return None


def match_failure_policy(policy: Obj | None, pod: Obj) -> tuple[str | None, bool, str | None]:
    """matchPodFailurePolicy: (the FailJob message, whether the failure counts, the matched rule's action)."""
    if not policy:
        return None, True, None
    status = pod.get("status") or {}
    namespace, name = key_of(pod)
    for index, rule in enumerate(policy.get("rules") or []):
        action = str(rule.get("action"))
        message = ""
        if rule.get("onExitCodes") is not None:
            matched = (_terminated_matching(status.get("containerStatuses") or [], rule["onExitCodes"])
                       or _terminated_matching(status.get("initContainerStatuses") or [], rule["onExitCodes"]))
            if matched is None:
                continue
            message = (f"Container {matched.get('name')} for pod {namespace}/{name} failed with exit code "
                       f"{matched['state']['terminated'].get('exitCode')} matching {action} rule at index {index}")
        elif rule.get("onPodConditions") is not None:
            found = next((c for c in status.get("conditions") or [] for pattern in rule["onPodConditions"]
                          if c.get("type") == pattern.get("type")
                          and c.get("status") == (pattern.get("status") or "True")), None)
            if found is None:
                continue
            message = (f"Pod {namespace}/{name} has condition {found.get('type')} matching {action} rule at "
                       f"index {index}")
        else:
            continue
        if action == "Ignore":
            return None, False, action
        if action == "Count":
            return None, True, action
        if action == "FailJob":
            return message, True, action
    return None, True, None


# -- backoff ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BackoffRecord:
    """kube's backoffRecord: failures since the last success and when the last of them finished."""

    failures: int = 0
    last_failure: float | None = None

    def remaining(self, now: float, base: float, cap: float) -> float:
        """getRemainingTime: base doubled per failure after the first, at most cap, less the time since."""
        if self.failures == 0 or self.last_failure is None:
            return 0.0
        delay = base
        for _ in range(1, self.failures):
            delay *= 2
            if delay >= cap:
                delay = cap
                break
        elapsed = now - self.last_failure
        return max(0.0, delay - elapsed) if delay >= elapsed else 0.0


def finish_time(pod: Obj, now: float) -> float:
    """getFinishedTime: the latest container finish, else the Ready=False transition, else deletion, else now."""
    status = pod.get("status") or {}
    finishes = [parse_time(((s.get("state") or {}).get("terminated") or {}).get("finishedAt"))
                for s in status.get("containerStatuses") or []]
    known = [f for f in finishes if f is not None]
    if known:
        return max(known)
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    if ready is not None and ready.get("status") == "False":
        when = parse_time(ready.get("lastTransitionTime"))
        if when is not None:
            return when
    deleted = parse_time(_meta(pod).get("deletionTimestamp"))
    return deleted if deleted is not None else now


def next_backoff(record: BackoffRecord, succeeded: list[Obj], failed: list[Obj], now: float) -> BackoffRecord:
    """newBackoffRecord."""
    if not succeeded and not failed:
        return record
    failed_times = sorted(finish_time(p, now) for p in failed)
    if not succeeded:
        return BackoffRecord(record.failures + len(failed), failed_times[-1])
    last_success = max(finish_time(p, now) for p in succeeded)
    after = [t for t in failed_times if t > last_success]
    return BackoffRecord(len(after), after[-1] if after else None)


# -- the controller --------------------------------------------------------------------------------------------------


def _new_condition(kind: str, reason: str, message: str, now: float) -> Obj:
    stamp = rfc3339(now)
    return {"type": kind, "status": "True", "lastProbeTime": stamp, "lastTransitionTime": stamp, "reason": reason,
            "message": message}


def _ensure_condition(status: Obj, kind: str, value: str, reason: str, message: str, now: float) -> bool:
    """ensureJobConditionStatus: True when the conditions changed."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    for c in conditions:
        if c.get("type") == kind:
            if c.get("status") == value and c.get("reason") == reason and c.get("message") == message:
                return False
            if c.get("status") != value:
                c["lastTransitionTime"] = rfc3339(now)
            c.update(status=value, reason=reason, message=message, lastProbeTime=rfc3339(now))
            return True
    if value == "False":  # a condition that never was True is not added as False
        return False
    conditions.append(_new_condition(kind, reason, message, now))
    return True


def _with_index_env(template: Obj) -> Obj:
    """addCompletionIndexEnvVariables on a copy of the template."""
    out = copy.deepcopy(template)
    spec = out.setdefault("spec", {})
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            env = container.setdefault("env", [])
            if not any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
                env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
                    "apiVersion": "v1", "fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}}})
    return out


def terminating_namespace(err: errors.ApiError) -> bool:
    """The create was refused because the namespace is being deleted (HasStatusCause NamespaceTerminating)."""
    return any(cause.reason == "NamespaceTerminating" for cause in err.status.details.causes)


def _revision(obj: Obj) -> int:
    """The object's resourceVersion as the store's revision it is (0 when it is not a number)."""
    text = str(_meta(obj).get("resourceVersion", ""))
    return int(text) if text.isdigit() else 0


def _orphan_key(pod: Obj) -> Key:
    return str(_meta(pod).get("namespace", "")), ORPHAN + str(_meta(pod).get("name", ""))


def generate_name_with_index(job_name: str, index: int) -> str:
    """podGenerateNameWithIndex: `<job>-<index>-`, the job's name cut so the prefix stays 58 characters."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > 58:
        prefix = prefix[:58 - len(suffix)] + suffix
    return prefix


class JobController(KeyedController):
    name = "job-controller"

    def __init__(self, core: Core, informers: SharedInformers | None = None, *,
                 clock: Callable[[], float] = time.time, pod_backoff: float = DEFAULT_BACKOFF,
                 max_pod_backoff: float = MAX_BACKOFF) -> None:
        super().__init__(core, informers)
        self.clock = clock
        self.pod_backoff = pod_backoff
        self.max_pod_backoff = max_pod_backoff
        self.recorder = EventRecorder(core, "job-controller")
        self.pod_control = PodControl(core, self.recorder)
        self.expectations: Expectations[Key] = Expectations()
        self._finalizers_expected: dict[Key, set[str]] = {}  # uids whose finalizer removal is not seen yet
        self._backoffs: dict[Key, BackoffRecord] = {}
        self._written: dict[Key, int] = {}  # the resourceVersion of each Job's last status write here
        self.jobs = self.follow(JOBS, self._job_changed)
        self.pods = self.follow(PODS, self._pod_changed)

    async def stop(self) -> None:
        await super().stop()
        await self.recorder.stop()

    # -- informer handlers

    def _job_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            if old is not None:
                key = key_of(old)
                self.expectations.forget(key)
                self._finalizers_expected.pop(key, None)
                self._backoffs.pop(key, None)
                self._written.pop(key, None)
            return
        self.queue(key_of(new))

    def _job_key_of(self, pod: Obj) -> Key | None:
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != KIND or not str(ref.get("apiVersion", "")).startswith("batch/"):
            return None
        return str(_meta(pod).get("namespace", "")), str(ref.get("name", ""))

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        pod = new or old
        if pod is None:
            return
        key = self._job_key_of(pod)
        job = self.jobs.get(key) if key is not None else None
        if key is None or job is None or (controller_of(pod) or {}).get("uid") != _uid(job):
            if new is not None and controller_of(new) is None:
                self._queue_orphan(new)
            if new is not None and has_finalizer(new):
                self.queue(_orphan_key(new))  # no Job of its own to count it: the finalizer goes
            return
        name = str(_meta(pod).get("name", ""))
        if old is None and new is not None:
            self.expectations.creation_observed(key)
        if new is None or (_meta(new).get("deletionTimestamp") and not _meta(old or {}).get("deletionTimestamp")):
            self.expectations.deletion_observed(key, name)
        if new is None or not has_finalizer(new):
            expected = self._finalizers_expected.get(key)
            if expected:
                expected.discard(_uid(pod))
        self.queue(key)

    def _queue_orphan(self, pod: Obj) -> None:
        """An orphan Pod: the Jobs of its namespace whose selector matches may adopt it."""
        namespace = str(_meta(pod).get("namespace", ""))
        pod_labels = _meta(pod).get("labels") or {}
        for job in self.jobs.in_namespace(namespace):
            try:
                selector = label_selectors.from_label_selector((job.get("spec") or {}).get("selector"))
            except (label_selectors.SelectorError, TypeError):
                continue
            if not selector.empty and selector.matches(pod_labels):
                self.queue(key_of(job))

    # -- sync

    async def sync(self, key: Key) -> None:
        if key[1].startswith(ORPHAN):
            await self._sync_orphan(key[0], key[1][len(ORPHAN):])
            return
        cached = self.jobs.get(key)
        if cached is None:
            return
        if _revision(cached) < self._written.get(key, 0):
            return  # the cache has not seen this controller's last status write; its event queues the key
        if finished(cached):
            await self._release_finished(key, cached)
            return
        job = copy.deepcopy(cached)
        status: Obj = job.setdefault("status", {})
        spec: Obj = job.get("spec") or {}
        now = self.clock()
        indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions")
        suspended = bool(spec.get("suspend"))
        policy = spec.get("podFailurePolicy")
        pods = await self._pods_for(job)
        satisfied = self.expectations.satisfied(key)
        expected_rm = set(self._finalizers_expected.get(key, set()))
        active_pods = [p for p in pods if _phase(p) not in ("Succeeded", "Failed")
                       and not _meta(p).get("deletionTimestamp")]
        active = len(active_pods)
        uncounted = status.get("uncountedTerminatedPods") or {}
        uncounted_succeeded = set(uncounted.get("succeeded") or [])
        uncounted_failed = set(uncounted.get("failed") or [])

        def valid(p: Obj) -> bool:
            if not has_finalizer(p) or _uid(p) in expected_rm:
                return False
            if indexed:
                ix = completion_index(p)
                return ix is not None and ix < int(completions or 0)
            return True

        new_succeeded = [p for p in pods if valid(p) and _uid(p) not in uncounted_succeeded
                         and _phase(p) == "Succeeded"]
        new_failed = [p for p in pods if valid(p) and _uid(p) not in uncounted_failed and self._pod_failed(job, p)]
        succeeded = int(status.get("succeeded") or 0) + len(new_succeeded) + len(uncounted_succeeded)
        failed = (int(status.get("failed") or 0) + len(uncounted_failed)
                  + sum(1 for p in new_failed if match_failure_policy(policy, p)[1]))
        ready = sum(1 for p in active_pods if is_pod_ready(p))
        backoff_record = next_backoff(self._backoffs.get(key, BackoffRecord()), new_succeeded, new_failed, now)

        if not status.get("startTime") and not suspended:
            status["startTime"] = rfc3339(now)
        finished_condition: Obj | None = None
        target = condition_of(job, FAILURE_TARGET)
        if target is not None and target.get("status") == "True":
            finished_condition = _new_condition(FAILED, str(target.get("reason", "")),
                                                str(target.get("message", "")), now)
        elif policy:
            message = next((m for p in pods if self._pod_failed(job, p)
                            for m in [match_failure_policy(policy, p)[0]] if m is not None), None)
            if message is not None:
                finished_condition = _new_condition(FAILURE_TARGET, POD_FAILURE_POLICY, message, now)
        if finished_condition is None:
            limit = int(spec.get("backoffLimit", 6))
            if failed > limit or self._past_backoff_limit_on_failure(spec, active_pods):
                finished_condition = _new_condition(FAILED, BACKOFF_LIMIT_EXCEEDED,
                                                    "Job has reached the specified backoff limit", now)
            elif self._past_deadline(job, now):
                finished_condition = _new_condition(FAILED, DEADLINE_EXCEEDED,
                                                    "Job was active longer than specified deadline", now)
            elif spec.get("activeDeadlineSeconds") is not None and not suspended:
                started = parse_time(status.get("startTime")) or now
                self.queue_after(key, started + int(spec["activeDeadlineSeconds"]) - now)

        succeeded_indexes: set[int] = set()
        previous_indexes: set[int] = set()
        if indexed:
            previous_indexes = parse_indexes(str(status.get("completedIndexes") or ""), int(completions or 0))
            succeeded_indexes = previous_indexes | {ix for p in pods if _phase(p) == "Succeeded" and has_finalizer(p)
                                                    for ix in [completion_index(p)]
                                                    if ix is not None and ix < int(completions or 0)}
            succeeded = len(succeeded_indexes)

        suspend_changed = False
        if finished_condition is not None:
            deleted = await self._delete_pods(key, job, active_pods)
            if deleted != active or not satisfied:
                finished_condition = None
            active -= deleted
        else:
            managed = False
            if satisfied and not _meta(job).get("deletionTimestamp"):
                active = await self._manage(key, job, active_pods, succeeded, succeeded_indexes, backoff_record, now)
                managed = True
            complete = (succeeded > 0 and active == 0) if completions is None else (
                succeeded >= int(completions) and active == 0)
            if complete:
                finished_condition = _new_condition(COMPLETE, "", "", now)
            elif managed:
                if suspended:
                    if _ensure_condition(status, SUSPENDED, "True", "JobSuspended", "Job suspended", now):
                        suspend_changed = True
                        self.recorder.event(job, NORMAL, "Suspended", "Job suspended")
                elif _ensure_condition(status, SUSPENDED, "False", "JobResumed", "Job resumed", now):
                    suspend_changed = True
                    self.recorder.event(job, NORMAL, "Resumed", "Job resumed")
                    status["startTime"] = rfc3339(now)

        needs_update = (suspend_changed or active != int(status.get("active") or 0)
                        or ready != status.get("ready") or status.get("startTime") != (cached.get("status") or {})
                        .get("startTime"))
        status["active"] = active
        status["ready"] = ready
        await self._track(key, job, pods, previous_indexes, expected_rm, finished_condition, needs_update,
                          backoff_record)

    async def _sync_orphan(self, namespace: str, name: str) -> None:
        """syncOrphanPod: a Pod with the tracking finalizer whose Job is gone, or that has none, loses the
        finalizer, unless a running Job controls it by now."""
        pod = self.pods.get((namespace, name))
        if pod is None or not has_finalizer(pod):
            return
        key = self._job_key_of(pod)
        if key is not None:
            job = self.jobs.get(key)
            if job is not None and (controller_of(pod) or {}).get("uid") == _uid(job) and not finished(job):
                return
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}
        try:
            await self.patch(path("pods", namespace), name, patch)
        except errors.ApiError as err:
            if err.code != 404:
                raise

    def _pod_failed(self, job: Obj, pod: Obj) -> bool:
        """isPodFailed: Failed, or (without a podFailurePolicy) being deleted before it succeeded."""
        if (job.get("spec") or {}).get("podFailurePolicy"):
            return _phase(pod) == "Failed"
        if _phase(pod) == "Failed":
            return True
        return bool(_meta(pod).get("deletionTimestamp")) and _phase(pod) != "Succeeded"

    @staticmethod
    def _past_backoff_limit_on_failure(spec: Obj, active_pods: list[Obj]) -> bool:
        """pastBackoffLimitOnFailure: for restartPolicy OnFailure, the active Pods' container restarts."""
        if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
            return False
        restarts = sum(int(s.get("restartCount") or 0) for p in active_pods
                       for field in ("initContainerStatuses", "containerStatuses")
                       for s in (p.get("status") or {}).get(field) or [])
        limit = int(spec.get("backoffLimit", 6))
        return restarts > 0 if limit == 0 else restarts >= limit

    @staticmethod
    def _past_deadline(job: Obj, now: float) -> bool:
        spec, status = job.get("spec") or {}, job.get("status") or {}
        deadline = spec.get("activeDeadlineSeconds")
        started = parse_time(status.get("startTime"))
        if deadline is None or started is None or spec.get("suspend"):
            return False
        return now - started >= int(deadline)

    async def _pods_for(self, job: Obj) -> list[Obj]:
        """getPodsForJob: the namespace's Pods this Job controls, after adopting orphans its selector matches
        and releasing those it no longer matches."""
        namespace = str(_meta(job).get("namespace", ""))
        try:
            selector = label_selectors.from_label_selector((job.get("spec") or {}).get("selector"))
        except (label_selectors.SelectorError, TypeError):
            return []
        uid = _uid(job)
        candidates = [p for p in self.pods.in_namespace(namespace)
                      if (controller_of(p) or {}).get("uid") == uid
                      or (controller_of(p) is None and selector.matches(_meta(p).get("labels") or {}))]
        manager = ControllerRefManager(self.core, job, path("jobs", namespace, group="batch"), API_VERSION, KIND,
                                       selector)
        claimed = await manager.claim(candidates, lambda ns: path("pods", ns))
        return claimed

    async def _manage(self, key: Key, job: Obj, active_pods: list[Obj], succeeded: int,
                      succeeded_indexes: set[int], record: BackoffRecord, now: float) -> int:
        """manageJob: the number of active Pods after creating or deleting toward what the Job wants."""
        spec = job.get("spec") or {}
        active = len(active_pods)
        if spec.get("suspend"):
            return active - await self._delete_pods(key, job, active_pods)
        parallelism = int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        if completions is None:
            want = active if succeeded > 0 else parallelism
        else:
            want = max(0, min(int(completions) - succeeded, parallelism))
        indexed = spec.get("completionMode") == "Indexed"
        remove = self._for_removal(job, active_pods, max(0, active - want))[:MAX_PER_SYNC]
        if remove:
            self.expectations.expect_deletions(key, [str(_meta(p).get("name", "")) for p in remove])
            return active - await self._delete_pods(key, job, remove, expected=True)
        if active >= want:
            return active
        wait = record.remaining(now, self.pod_backoff, self.max_pod_backoff)
        if wait > 0:
            self.queue_after(key, wait)
            return active
        diff = min(want - active, MAX_PER_SYNC)
        indexes: list[int | None] = [None] * diff
        if indexed:
            taken = succeeded_indexes | {ix for p in active_pods for ix in [completion_index(p)] if ix is not None}
            pending = [i for i in range(int(completions or 0)) if i not in taken]
            indexes = list(pending[:diff])
            diff = len(indexes)
        if diff == 0:
            return active
        self.expectations.expect_creations(key, diff)
        template = copy.deepcopy(spec.get("template") or {})
        if indexed:
            template = _with_index_env(template)
        finalizers = template.setdefault("metadata", {}).setdefault("finalizers", [])
        if TRACKING_FINALIZER not in finalizers:
            finalizers.append(TRACKING_FINALIZER)
        created = active + diff
        first_failure: BaseException | None = None
        batch = min(diff, SLOW_START_INITIAL_BATCH)
        start = 0
        while start < diff:
            chunk = indexes[start:start + batch]
            results = await asyncio.gather(*(self._create_pod(job, template, ix) for ix in chunk),
                                           return_exceptions=True)
            failed = 0
            for result in results:
                if isinstance(result, errors.ApiError) and result.code == 403 and terminating_namespace(result):
                    continue  # every later create fails the same way; kube leaves its count as it is
                if isinstance(result, BaseException):
                    failed += 1
                    first_failure = first_failure or result
            self.expectations.lower(key, failed, 0)
            created -= failed
            start += len(chunk)
            if failed and start < diff:
                skipped = diff - start
                self.expectations.lower(key, skipped, 0)  # never attempted: not awaited
                created -= skipped
                break
            batch = min(2 * batch, diff - start)
        if first_failure is not None:
            raise first_failure
        return created

    async def _create_pod(self, job: Obj, template: Obj, index: int | None) -> Obj:
        """CreatePodsWithGenerateName: the Job's Pod for `index` (None: NonIndexed), with its events."""
        name = str(_meta(job).get("name", ""))
        namespace, ref = str(_meta(job).get("namespace", "")), controller_ref(job, API_VERSION, KIND)
        if index is None:
            return await self.pod_control.create(namespace, template, job, ref, kind=KIND, api_version=API_VERSION)
        indexed = copy.deepcopy(template)
        metadata = indexed.setdefault("metadata", {})
        metadata.setdefault("annotations", {})[COMPLETION_INDEX] = str(index)
        metadata.setdefault("labels", {})[COMPLETION_INDEX] = str(index)
        indexed.setdefault("spec", {})["hostname"] = f"{name}-{index}"
        return await self.pod_control.create(namespace, indexed, job, ref, kind=KIND, api_version=API_VERSION,
                                             generate_name=generate_name_with_index(name, index))

    @staticmethod
    def _for_removal(job: Obj, active_pods: list[Obj], at_least: int) -> list[Obj]:
        """activePodsForRemoval: for an Indexed Job, Pods of a duplicate or out-of-range index first; then
        unready before ready, newest first."""
        spec = job.get("spec") or {}
        chosen: list[Obj] = []
        rest = list(active_pods)
        if spec.get("completionMode") == "Indexed":
            seen: set[int] = set()
            rest = []
            for pod in sorted(active_pods, key=lambda p: (not is_pod_ready(p), str(_meta(p).get("creationTimestamp")))):
                ix = completion_index(pod)
                if ix is None or ix >= int(spec.get("completions") or 0) or ix in seen:
                    chosen.append(pod)
                else:
                    seen.add(ix)
                    rest.append(pod)
        if len(chosen) < at_least:
            rest.sort(key=lambda p: str(_meta(p).get("creationTimestamp", "")), reverse=True)
            rest.sort(key=is_pod_ready)
            chosen += rest[:at_least - len(chosen)]
        return chosen

    async def _delete_pods(self, key: Key, job: Obj, pods: list[Obj], *, expected: bool = False) -> int:
        """deleteJobPods: how many were deleted (a Pod already gone counts)."""
        namespace = str(_meta(job).get("namespace", ""))

        async def one(pod: Obj) -> bool:
            name = str(_meta(pod).get("name", ""))
            try:
                await self.pod_control.delete(namespace, name, job, kind=KIND, api_version=API_VERSION)
            except errors.ApiError as err:
                if err.code == 404:
                    if expected:
                        self.expectations.deletion_observed(key, name)
                    return True
                if expected:
                    self.expectations.deletion_observed(key, name)
                raise
            return True

        results = await asyncio.gather(*(one(p) for p in pods), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return len(results)

    async def _track(self, key: Key, job: Obj, pods: list[Obj], previous_indexes: set[int], expected_rm: set[str],
                     finished_condition: Obj | None, needs_flush: bool, record: BackoffRecord) -> None:
        """trackJobStatusAndRemoveFinalizers: finished Pods into uncountedTerminatedPods, their finalizers
        removed, then into the counters; the Job's finished condition once nothing is uncounted."""
        spec, status = job.get("spec") or {}, job["status"]
        indexed = spec.get("completionMode") == "Indexed"
        completions = int(spec.get("completions") or 0)
        policy = spec.get("podFailurePolicy")
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        uncounted_succeeded: list[str] = list(uncounted.get("succeeded") or [])
        uncounted_failed: list[str] = list(uncounted.get("failed") or [])
        new_indexes: set[int] = set()
        to_release: list[Obj] = []
        reached_max = False
        for pod in pods:
            uid = _uid(pod)
            if not has_finalizer(pod) or uid in expected_rm:
                continue
            phase = _phase(pod)
            considered_failed = self._pod_failed(job, pod)
            if phase in ("Succeeded", "Failed") or considered_failed or finished_condition is not None \
                    or _meta(job).get("deletionTimestamp"):
                to_release.append(pod)
            if phase == "Succeeded" and uid not in uncounted_failed:
                if indexed:
                    ix = completion_index(pod)
                    if ix is not None and ix < completions and ix not in previous_indexes:
                        new_indexes.add(ix)
                        needs_flush = True
                elif uid not in uncounted_succeeded:
                    uncounted_succeeded.append(uid)
                    needs_flush = True
            elif (considered_failed or finished_condition is not None) and uid not in uncounted_failed:
                ix = completion_index(pod)
                in_range = not indexed or (ix is not None and ix < completions)
                if in_range and match_failure_policy(policy, pod)[1]:
                    uncounted_failed.append(uid)
                    needs_flush = True
            if len(new_indexes) + len(uncounted_succeeded) + len(uncounted_failed) >= MAX_UNCOUNTED:
                reached_max = True  # the rest wait for the next sync, which the writes below queue
                break
        if indexed:
            completed = format_indexes(previous_indexes | new_indexes)
            if completed != (status.get("completedIndexes") or ""):
                needs_flush = True
            status["completedIndexes"] = completed
            status["succeeded"] = len(previous_indexes | new_indexes)
        uncounted["succeeded"] = uncounted_succeeded
        uncounted["failed"] = uncounted_failed
        if finished_condition is not None and finished_condition["type"] == FAILURE_TARGET:
            status.setdefault("conditions", []).append(finished_condition)
            needs_flush = True
            finished_condition = _new_condition(FAILED, str(finished_condition["reason"]),
                                                str(finished_condition["message"]), self.clock())
        if needs_flush:
            job = await self._update_status(job)
            self._backoffs[key] = record
            needs_flush = False
        released = await self._release(key, job, to_release)
        status = job.setdefault("status", {})
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        still_there = {_uid(p) for p in pods if has_finalizer(p)} - released
        for field, counter in (("succeeded", "succeeded"), ("failed", "failed")):
            remaining = []
            for uid in uncounted.get(field) or []:
                if uid in still_there:
                    remaining.append(uid)
                else:
                    if not (indexed and field == "succeeded"):
                        status[counter] = int(status.get(counter) or 0) + 1
                    needs_flush = True
            uncounted[field] = remaining
        finishing = (finished_condition is not None and not reached_max and not uncounted.get("succeeded")
                     and not uncounted.get("failed"))
        if finishing:
            assert finished_condition is not None
            _ensure_condition(status, str(finished_condition["type"]), "True", str(finished_condition["reason"]),
                              str(finished_condition["message"]), self.clock())
            if finished_condition["type"] == COMPLETE:
                status["completionTime"] = finished_condition["lastTransitionTime"]
            needs_flush = True
        if needs_flush:
            job = await self._update_status(job)
            if finishing:
                assert finished_condition is not None
                if finished_condition["type"] == COMPLETE:
                    self.recorder.event(job, NORMAL, "Completed", "Job completed", kind=KIND,
                                        api_version=API_VERSION)
                else:
                    self.recorder.event(job, WARNING, str(finished_condition["reason"]),
                                        str(finished_condition["message"]), kind=KIND, api_version=API_VERSION)

    async def _update_status(self, job: Obj) -> Obj:
        """UpdateStatus with the Job's resourceVersion as precondition (a stale cache read is a 409, retried)."""
        body = copy.deepcopy(job)
        body.setdefault("apiVersion", API_VERSION)
        body.setdefault("kind", KIND)
        status = body.get("status") or {}
        uncounted = status.get("uncountedTerminatedPods") or {}
        if not uncounted.get("succeeded") and not uncounted.get("failed"):
            status["uncountedTerminatedPods"] = {}
        at = path("jobs", str(_meta(job).get("namespace", "")), group="batch")
        written = await self.update(at, body, subresource="status")
        self._written[key_of(written)] = _revision(written)
        return written

    async def _release(self, key: Key, job: Obj, pods: list[Obj]) -> set[str]:
        """removeTrackingFinalizerFromPods: the uids whose finalizer is gone (removed now, or the Pod gone)."""
        if not pods:
            return set()
        expected = self._finalizers_expected.setdefault(key, set())
        uids = [_uid(p) for p in pods]
        expected.update(uids)

        async def one(pod: Obj) -> str:
            patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}
            try:
                await self.patch(path("pods", str(_meta(pod).get("namespace", ""))), str(_meta(pod).get("name")),
                                 patch)
            except errors.ApiError as err:
                if err.code != 404:
                    expected.discard(_uid(pod))
                    raise
            return _uid(pod)

        results = await asyncio.gather(*(one(p) for p in pods), return_exceptions=True)
        done = {r for r in results if isinstance(r, str)}
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures and not done:
            raise failures[0]
        return done

    async def _release_finished(self, key: Key, job: Obj) -> None:
        """A finished Job's Pods that still carry the finalizer (an interrupted sync) lose it."""
        uid = _uid(job)
        namespace = str(_meta(job).get("namespace", ""))
        left = [p for p in self.pods.in_namespace(namespace)
                if has_finalizer(p) and (controller_of(p) or {}).get("uid") == uid
                and _uid(p) not in self._finalizers_expected.get(key, set())]
        await self._release(key, job, left)


def singletons(core: Core, informers: SharedInformers | None = None, **options: Any) -> list[Singleton]:
    controller = JobController(core, informers, **options)
    return [Singleton("JobController", controller.start, controller.stop)]
