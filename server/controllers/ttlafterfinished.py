"""The TTL-after-finished controller, as kube-controller-manager 1.28's (pkg/controller/ttlafterfinished): a
finished Job with spec.ttlSecondsAfterFinished is deleted that many seconds after it finished.

Contracts, as kube's:
- finished is the Complete or Failed condition True; the finish time is that condition's lastTransitionTime;
- a Job not due yet is synced again when it is due; a due one is read afresh from the core (its TTL or
  finish may have changed) and deleted with propagationPolicy Foreground and its uid as precondition, so its
  Pods go before it; a Job being deleted already is left alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.workload.keyed import Key, KeyedController, Obj, decode, key_of, named, path
from server.controllers.workload.pods import parse_time
from server.machinery import errors
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers


def expires_in(job: Obj, now: float) -> float | None:
    """processTTL: seconds until the Job is due (<= 0: due), None when it needs no cleanup."""
    if ((job.get("metadata") or {}).get("deletionTimestamp")
            or (job.get("spec") or {}).get("ttlSecondsAfterFinished") is None):
        return None
    finished_at = None
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            finished_at = parse_time(c.get("lastTransitionTime"))
    if finished_at is None:
        return None
    return finished_at + int(job["spec"]["ttlSecondsAfterFinished"]) - now


class TTLAfterFinishedController(KeyedController):
    name = "ttl-after-finished-controller"

    def __init__(self, core: Core, informers: SharedInformers | None = None, *,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(core, informers)
        self.clock = clock
        self.jobs = self.follow(path("jobs", group="batch"), self._job_changed)

    def _job_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None and expires_in(new, self.clock()) is not None:
            self.queue(key_of(new))

    async def sync(self, key: Key) -> None:
        job = self.jobs.get(key)
        if job is None:
            return
        left = expires_in(job, self.clock())
        if left is None:
            return
        if left > 0:
            self.queue_after(key, left)
            return
        at = path("jobs", key[0], group="batch")
        try:
            fresh = decode((await self.core.get(core_pb2.GetRequest(path=named(at, key[1])))).object)
        except errors.ApiError as err:
            if err.code == 404:
                return
            raise
        left = expires_in(fresh, self.clock())
        if left is None:
            return
        if left > 0:
            self.queue_after(key, left)
            return
        request = core_pb2.DeleteRequest(path=named(at, key[1]))
        request.options.propagationPolicy = "Foreground"
        request.options.preconditions.uid = str((fresh.get("metadata") or {}).get("uid", ""))
        try:
            await self.core.delete(request)
        except errors.ApiError as err:
            if err.code != 404:
                raise


def singletons(core: Core, informers: SharedInformers | None = None, **options: Any) -> list[Singleton]:
    controller = TTLAfterFinishedController(core, informers, **options)
    return [Singleton("TTLAfterFinishedController", controller.start, controller.stop)]
