"""What bench.workloads and bench.batch share: a kubelet stand-in in the bench's own process that reports each new
Pod's status as soon as it sees it (the controllers' wait on nodes taken out), a poll until the workload is
done, and the rounds that time it through the controllers beside the floor of the same Pod writes.

Each bench says what "reported" means for its workload (`StandIn.report`) and what the floor writes.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bench._util import context, emit, note
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.workload.keyed import Key, KeyedController, Obj, decode, path

NS = "default"
TIMEOUT = 120.0
FLOOR_LABEL = "bench/floor"  # the floor's Pods, which the bench writes itself


def key_of(obj: Obj) -> Key:
    return str(obj["metadata"].get("namespace", "")), str(obj["metadata"]["name"])


class StandIn(KeyedController):
    """Every Pod the stand-in has not reported yet (`reported` false), neither deleted nor the floor's, gets
    `status(pod)` written through pods/status."""

    name = "bench-kubelet"
    workers = 4

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.pods = self.follow(path("pods"), lambda old, new: self.queue(key_of(new or old or {})))

    @staticmethod
    def reported(pod: Obj) -> bool:
        raise NotImplementedError

    @staticmethod
    def status(pod: Obj, now: str) -> Obj:
        raise NotImplementedError

    async def sync(self, key: Key) -> None:
        pod = self.pods.get(key)
        if pod is None or self.reported(pod) or pod["metadata"].get("deletionTimestamp") \
                or FLOOR_LABEL in (pod["metadata"].get("labels") or {}):
            return
        await self.report(pod)

    async def report(self, pod: Obj) -> None:
        """The pod's status as this stand-in reports it, written now."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        await self.update(path("pods", key_of(pod)[0]), {**pod, "status": self.status(pod, now)},
                          subresource="status")


async def until(controller: KeyedController, at: core_pb2.ResourcePath, done: Callable[[Obj], bool]) -> bool:
    """Poll the object at `at` until `done` says so (True), or TIMEOUT passes (False)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if done(decode((await controller.core.get(core_pb2.GetRequest(path=at))).object)):
            return True
        await asyncio.sleep(0.005)
    return False


async def through(controller: KeyedController, workload: Obj, at: core_pb2.ResourcePath,
                  done: Callable[[Obj], bool]) -> tuple[float, int, bool]:
    """Create `workload` at `at` (its collection) and wait until done: seconds, store writes, whether it was."""
    store = controller.core.context.store
    before = store.current_revision()
    started = time.perf_counter()
    await controller.create(at, workload)
    named = core_pb2.ResourcePath()
    named.CopyFrom(at)
    named.name = workload["metadata"]["name"]
    ok = await until(controller, named, done)
    return time.perf_counter() - started, store.current_revision() - before, ok


async def floor(count: int, parallel: int, one: Callable[[int], Awaitable[None]]) -> float:
    """Seconds for `one(i)` for every i below count, `parallel` at a time."""
    gate = asyncio.Semaphore(parallel)

    async def gated(i: int) -> None:
        async with gate:
            await one(i)

    started = time.perf_counter()
    await asyncio.gather(*(gated(i) for i in range(count)))
    return time.perf_counter() - started


@dataclass(frozen=True)
class Rounds:
    """One size's rounds: medians of the controllers' seconds and writes and of the floor's seconds."""

    seconds: float
    writes: float
    floor: float
    ok: bool


async def rounds(size: int, count: int, what: str, prefix: str,
                 controllers: Callable[[str, int], Awaitable[tuple[float, int, bool]]],
                 floor_of: Callable[[str, int], Awaitable[float]]) -> Rounds:
    """`count` rounds of `controllers` then `floor_of` for `size` (`what` names a size in progress lines)."""
    seconds: list[float] = []
    writes: list[int] = []
    floors: list[float] = []
    ok = True
    for round_ in range(count):
        took, wrote, done = await controllers(f"{prefix}{size}-{round_}", size)
        ok = ok and done
        seconds.append(took)
        writes.append(wrote)
        floors.append(await floor_of(f"f{size}-{round_}", size))
        note(f"{size} {what}, round {round_}: {took:.3f} s ({wrote} writes), floor {floors[-1]:.3f} s")
    return Rounds(statistics.median(seconds), statistics.median(writes), statistics.median(floors), ok)


def report(op: str, done: str, got: Rounds, rounds_run: int, floor_writes: int, **size: int) -> None:
    """The controllers' and the floor's figures of one size (`size`: its name and value, as the lines carry it)."""
    emit(op, "controllers", "seconds", got.seconds, context(f"create to {done}"), correct=got.ok, **size,
         writes=got.writes, rounds=rounds_run)
    emit(op, "floor", "seconds", got.floor, context("the Pod writes alone"), correct=True, **size,
         writes=floor_writes, rounds=rounds_run)
