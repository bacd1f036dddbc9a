"""The CronJob controller, as kube-controller-manager 1.28's (pkg/controller/cronjob, ControllerV2): Jobs made
from a CronJob's jobTemplate at its schedule's times, and the CronJob's status.

Contracts, as kube's:
- the schedule is robfig/cron's (server/kinds/cron.py), in spec.timeZone when set (a zone that does not load:
  event UnknownTimeZone, nothing scheduled); a TZ=/CRON_TZ= prefix in the schedule works but is reported
  (UnsupportedSchedule); a schedule that does not parse: UnparseableSchedule; one that never fires:
  InvalidSchedule;
- the time to run is the most recent schedule time not after now and after lastScheduleTime (or the CronJob's
  creation), no older than startingDeadlineSeconds (older: event MissSchedule, nothing run); more than 100
  missed times: event TooManyMissedTimes, and the most recent is run;
- the Job is named `<cronjob>-<scheduled time in Unix minutes>` (so a time is run once), carries the template's
  labels and annotations, `batch.kubernetes.io/cronjob-scheduled-timestamp` (RFC 3339 in the CronJob's zone)
  and a controller ownerReference; event SuccessfulCreate "Created job <name>"; status.active lists it and
  status.lastScheduleTime is the scheduled time;
- concurrencyPolicy Forbid skips a time while a Job is active (event JobAlreadyActive), Replace deletes the
  active Jobs first (event SuccessfulDelete, propagation Background); suspend schedules nothing;
- finished Jobs leave status.active (event SawCompletedJob), set lastSuccessfulTime (a Complete Job's
  completionTime), and beyond successfulJobsHistoryLimit / failedJobsHistoryLimit the oldest are deleted; an
  active Job that is gone leaves status.active (event MissingJob); an unfinished Job it owns but does not list
  is reported (UnexpectedJob);
- the CronJob is synced again at its next schedule time (plus 100 ms), read from `clock`, which tests drive.
"""

from __future__ import annotations

import copy
import zoneinfo
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.job import finished, terminating_namespace
from server.controllers.workload.events import NORMAL, WARNING, EventRecorder
from server.controllers.workload.keyed import Key, KeyedController, Obj, decode, key_of, named, path
from server.controllers.workload.pods import controller_of, controller_ref, parse_time
from server.kinds import cron
from server.machinery import errors
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

API_VERSION, KIND = "batch/v1", "CronJob"
SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
NEXT_SCHEDULE_DELTA = 0.1  # nextScheduleDelta
TOO_MANY_MISSED = 100
Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(UTC)


def _meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def _time(value: object) -> datetime | None:
    seconds = parse_time(value)
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def _rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_name(cronjob: Obj, scheduled: datetime) -> str:
    """getJobName: `<name>-<scheduled time in minutes since the epoch>`."""
    return f"{_meta(cronjob).get('name', '')}-{int(scheduled.timestamp()) // 60}"


def most_recent(cronjob: Obj, now: datetime, schedule: cron.Schedule, *,
                with_deadline: bool) -> tuple[datetime, datetime | None, int]:
    """mostRecentScheduleTime: (the earliest time considered, the most recent schedule time not after now or
    None, the approximate number of missed times when more than one may be, else 0). ValueError for a schedule
    whose times are under a second apart or that never fires."""
    status, spec = cronjob.get("status") or {}, cronjob.get("spec") or {}
    earliest = (_time(status.get("lastScheduleTime")) or _time(_meta(cronjob).get("creationTimestamp"))
                or now)
    deadline = spec.get("startingDeadlineSeconds")
    if with_deadline and deadline is not None:
        earliest = max(earliest, now - timedelta(seconds=int(deadline)))
    t1 = schedule.next(earliest)
    if t1 is None:
        raise ValueError("the schedule has no next time")
    t2 = schedule.next(t1)
    if now < t1:
        return earliest, None, 0
    if t2 is None or now < t2:
        return earliest, t1, 0
    between = round((t2 - t1).total_seconds())
    if between < 1:
        raise ValueError("time difference between two schedules is less than 1 second")
    missed = int((now - t1).total_seconds()) // between + 1
    recent: datetime | None = None
    t: datetime | None = schedule.next(t1 + timedelta(seconds=(missed - 2) * between))
    while t is not None and t <= now:
        recent = t
        t = schedule.next(t)
    return earliest, recent, missed


def _zone(name: str | None) -> tzinfo:
    if not name or name == "UTC":
        return UTC
    return zoneinfo.ZoneInfo(name)


class CronJobController(KeyedController):
    name = "cronjob-controller"

    def __init__(self, core: Core, informers: SharedInformers | None = None, *, clock: Clock = _now) -> None:
        super().__init__(core, informers)
        self.clock = clock
        self.recorder = EventRecorder(core, "cronjob-controller")
        self.cronjobs = self.follow(path("cronjobs", group="batch"), self._cronjob_changed)
        self.jobs = self.follow(path("jobs", group="batch"), self._job_changed)

    async def stop(self) -> None:
        await super().stop()
        await self.recorder.stop()

    def resync(self) -> None:
        """Every CronJob synced now (a test that moved the clock)."""
        for key in list(self.cronjobs):
            self.queue(key)

    def _cronjob_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None:
            self.queue(key_of(new))

    def _job_changed(self, old: Obj | None, new: Obj | None) -> None:
        job = new or old or {}
        ref = controller_of(job)
        if ref is not None and ref.get("kind") == KIND:
            self.queue((str(_meta(job).get("namespace", "")), str(ref.get("name", ""))))

    def _event(self, cronjob: Obj, type_: str, reason: str, message: str) -> None:
        self.recorder.event(cronjob, type_, reason, message, kind=KIND, api_version=API_VERSION)

    async def sync(self, key: Key) -> None:
        cached = self.cronjobs.get(key)
        if cached is None:
            return
        cronjob = copy.deepcopy(cached)
        uid = _meta(cronjob).get("uid")
        jobs = [j for j in self.jobs.in_namespace(key[0]) if (controller_of(j) or {}).get("uid") == uid]
        requeue, update = await self._sync(cronjob, jobs)
        if await self._cleanup(cronjob, jobs):
            update = True
        if update:
            body = copy.deepcopy(cronjob)
            body.setdefault("apiVersion", API_VERSION)
            body.setdefault("kind", KIND)
            await self.update(path("cronjobs", key[0], group="batch"), body, subresource="status")
        if requeue is not None:
            self.queue_after(key, requeue)

    async def _sync(self, cronjob: Obj, jobs: list[Obj]) -> tuple[float | None, bool]:
        """syncCronJob: (seconds until the next sync or None, whether the status changed)."""
        now = self.clock()
        namespace = str(_meta(cronjob).get("namespace", ""))
        status: Obj = cronjob.setdefault("status", {})
        spec: Obj = cronjob.get("spec") or {}
        update = False
        children = set()
        for job in jobs:
            job_uid = _meta(job).get("uid")
            children.add(job_uid)
            listed = any(ref.get("uid") == job_uid for ref in status.get("active") or [])
            done = finished(job)
            if not listed and not done:
                fresh = await self._fresh(cronjob)
                if fresh is not None and any(r.get("uid") == job_uid for r in (fresh.get("status") or {}).get(
                        "active") or []):
                    cronjob.clear()
                    cronjob.update(fresh)  # the cache had not seen the status naming it yet
                    status = cronjob.setdefault("status", {})
                    continue
                self._event(cronjob, WARNING, "UnexpectedJob",
                            f"Saw a job that the controller did not create or forgot: {_meta(job).get('name')}")
            elif listed and done:
                status["active"] = [r for r in status.get("active") or [] if r.get("uid") != job_uid]
                self._event(cronjob, NORMAL, "SawCompletedJob",
                            f"Saw completed job: {_meta(job).get('name')}, status: {done}")
                update = True
            elif done and done == "Complete":
                completed = (job.get("status") or {}).get("completionTime")
                last = status.get("lastSuccessfulTime")
                if completed and (not last or (_time(completed) or now) > (_time(last) or now)):
                    status["lastSuccessfulTime"] = completed
                    update = True
        for ref in list(status.get("active") or []):
            if ref.get("uid") in children:
                continue
            try:
                await self.core.get(core_pb2.GetRequest(path=named(path("jobs", namespace, group="batch"),
                                                                   str(ref.get("name", "")))))
            except errors.ApiError as err:
                if err.code != 404:
                    raise
                self._event(cronjob, NORMAL, "MissingJob", f"Active job went missing: {ref.get('name')}")
                status["active"] = [r for r in status.get("active") or [] if r.get("uid") != ref.get("uid")]
                update = True
        if _meta(cronjob).get("deletionTimestamp"):
            return None, update
        time_zone = spec.get("timeZone")
        if time_zone is not None:
            problem = cron.location_error(str(time_zone))
            if problem:
                self._event(cronjob, WARNING, "UnknownTimeZone", f'invalid timeZone: "{time_zone}": {problem}')
                return None, update
        if spec.get("suspend"):
            return None, update
        schedule_text = str(spec.get("schedule") or "")
        if "TZ" in schedule_text:
            if time_zone is None:
                self._event(cronjob, WARNING, "UnsupportedSchedule",
                            f'CRON_TZ or TZ used in schedule "{schedule_text}" is not officially supported, see '
                            "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more "
                            "details")
        elif time_zone is not None:
            schedule_text = f"TZ={time_zone} {schedule_text}"
        try:
            schedule = cron.parse(schedule_text)
        except cron.CronError as err:
            self._event(cronjob, WARNING, "UnparseableSchedule",
                        f'unparseable schedule: "{spec.get("schedule")}" : {err}')
            return None, update
        try:
            _, scheduled, missed = most_recent(cronjob, now, schedule, with_deadline=True)
        except ValueError as err:
            self._event(cronjob, WARNING, "InvalidSchedule", f"invalid schedule: {spec.get('schedule')} : {err}")
            return None, update
        if scheduled is not None and missed > TOO_MANY_MISSED:
            self._event(cronjob, WARNING, "TooManyMissedTimes", "too many missed start times. Set or decrease "
                                                                ".spec.startingDeadlineSeconds or check clock skew")
        if scheduled is None:
            return self._next_in(cronjob, now, schedule), update
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + timedelta(seconds=int(deadline)) < now:
            self._event(cronjob, WARNING, "MissSchedule", "Missed scheduled time to start a job: "
                        + scheduled.strftime("%a, %d %b %Y %H:%M:%S +0000"))
            return self._next_in(cronjob, now, schedule), update
        name = job_name(cronjob, scheduled)
        last = _time(status.get("lastScheduleTime"))
        if any(r.get("name") == name for r in status.get("active") or []) or last == scheduled:
            return self._next_in(cronjob, now, schedule), update
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and status.get("active"):
            self._event(cronjob, NORMAL, "JobAlreadyActive",
                        "Not starting job because prior execution is running and concurrency policy is Forbid")
            return self._next_in(cronjob, now, schedule), update
        if policy == "Replace":
            for ref in list(status.get("active") or []):
                await self._delete_job(cronjob, namespace, str(ref.get("name", "")))
                status["active"] = [r for r in status.get("active") or [] if r.get("uid") != ref.get("uid")]
                update = True
        job = self._job_from_template(cronjob, scheduled)
        try:
            created = await self.create(path("jobs", namespace, group="batch"), job)
        except errors.ApiError as err:
            if err.code == 409 and err.status.reason == "AlreadyExists":
                existing = self.jobs.get((namespace, name))
                created = existing or {}
                if not created:
                    return self._next_in(cronjob, now, schedule), update
            else:
                if not terminating_namespace(err):
                    self._event(cronjob, WARNING, "FailedCreate", f"Error creating job: {err.status.message}")
                raise
        else:
            self._event(cronjob, NORMAL, "SuccessfulCreate", f"Created job {_meta(created).get('name')}")
        created_meta = _meta(created)
        if (controller_of(created) or {}).get("uid") == _meta(cronjob).get("uid"):
            status.setdefault("active", []).append({
                "kind": "Job", "namespace": created_meta.get("namespace"), "name": created_meta.get("name"),
                "uid": created_meta.get("uid"), "apiVersion": API_VERSION,
                "resourceVersion": created_meta.get("resourceVersion")})
        status["lastScheduleTime"] = _rfc3339(scheduled)
        return self._next_in(cronjob, now, schedule), True

    async def _fresh(self, cronjob: Obj) -> Obj | None:
        """The CronJob as the core has it now (None when it is gone)."""
        namespace, name = key_of(cronjob)
        try:
            got = await self.core.get(core_pb2.GetRequest(path=named(path("cronjobs", namespace, group="batch"),
                                                                     name)))
        except errors.ApiError as err:
            if err.code == 404:
                return None
            raise
        return decode(got.object)

    def _next_in(self, cronjob: Obj, now: datetime, schedule: cron.Schedule) -> float | None:
        """nextScheduleTimeDuration: seconds until the schedule's next time after the most recent (plus 100 ms)."""
        try:
            earliest, recent, _ = most_recent(cronjob, now, schedule, with_deadline=False)
        except ValueError:
            return None
        following = schedule.next(recent or earliest)
        if following is None:
            return None
        return (following - now).total_seconds() + NEXT_SCHEDULE_DELTA

    def _job_from_template(self, cronjob: Obj, scheduled: datetime) -> Obj:
        """getJobFromTemplate2."""
        template = (cronjob.get("spec") or {}).get("jobTemplate") or {}
        template_meta = template.get("metadata") or {}
        annotations = dict(template_meta.get("annotations") or {})
        zone = _zone((cronjob.get("spec") or {}).get("timeZone"))
        local = scheduled.astimezone(zone)
        annotations[SCHEDULED_TIMESTAMP] = (local.strftime("%Y-%m-%dT%H:%M:%SZ") if local.utcoffset() == timedelta(0)
                                            else local.isoformat(timespec="seconds"))
        metadata: Obj = {"name": job_name(cronjob, scheduled), "annotations": annotations,
                         "ownerReferences": [controller_ref(cronjob, API_VERSION, KIND)]}
        if template_meta.get("labels"):
            metadata["labels"] = dict(template_meta["labels"])
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
                "spec": copy.deepcopy(template.get("spec") or {})}

    async def _delete_job(self, cronjob: Obj, namespace: str, name: str) -> None:
        """deleteJob: propagation Background, event SuccessfulDelete."""
        request = core_pb2.DeleteRequest(path=named(path("jobs", namespace, group="batch"), name))
        request.options.propagationPolicy = "Background"
        try:
            await self.core.delete(request)
        except errors.ApiError as err:
            if err.code != 404:
                self._event(cronjob, WARNING, "FailedDelete", f"Deleted job: {err.status.message}")
                raise
            return
        self._event(cronjob, NORMAL, "SuccessfulDelete", f"Deleted job {name}")

    async def _cleanup(self, cronjob: Obj, jobs: list[Obj]) -> bool:
        """cleanupFinishedJobs: the oldest finished Jobs beyond the history limits are deleted."""
        spec = cronjob.get("spec") or {}
        namespace = str(_meta(cronjob).get("namespace", ""))
        changed = False
        for kind, field in (("Complete", "successfulJobsHistoryLimit"), ("Failed", "failedJobsHistoryLimit")):
            limit = spec.get(field)
            if limit is None:
                continue
            done = [j for j in jobs if finished(j) == kind]
            if len(done) <= int(limit):
                continue
            done.sort(key=_by_start_time)
            for job in done[:len(done) - int(limit)]:
                await self._delete_job(cronjob, namespace, str(_meta(job).get("name", "")))
                changed = True
        return changed


def _by_start_time(job: Obj) -> tuple[bool, str, str]:
    """byJobStartTime: oldest start first, Jobs not started last, then by name."""
    started = str((job.get("status") or {}).get("startTime") or "")
    return not started, started, str(_meta(job).get("name", ""))


def singletons(core: Core, informers: SharedInformers | None = None, **options: Any) -> list[Singleton]:
    controller = CronJobController(core, informers, **options)
    return [Singleton("CronJobController", controller.start, controller.stop)]
