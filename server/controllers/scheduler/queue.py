"""kube-scheduler 1.28's scheduling queue (internal/queue.PriorityQueue): the active queue ordered by priority
then by the time a Pod was first queued (the PrioritySort plugin), the backoff queue, and the unschedulable
Pods waiting for a cluster event.

Contracts, as kube's:
- a Pod that failed waits 1 s after its first attempt, doubled per attempt up to 10 s (its backoff), counted from
  its last attempt;
- a failed Pod goes to the unschedulable Pods, unless a cluster event came while it was being scheduled (then
  it goes straight to backoff, so the event is not missed);
- a cluster event moves the unschedulable Pods one of whose failing plugins cares for it to the active queue,
  or to the backoff queue while their backoff lasts; a Pod that failed for no plugin (an error) moves on any;
- an update to a queued Pod's spec or labels (not its status) moves it the same way; a Pod left unschedulable for
  5 minutes is moved without an event (flushUnschedulablePodsLeftover, checked every 30 s).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from server.controllers.scheduler.model import Key, Obj, PodInfo

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
UNSCHEDULABLE_TIMEOUT = 300.0
LEFTOVER_PERIOD = 30.0


@dataclass
class QueuedPod:
    """framework.QueuedPodInfo."""

    pod: PodInfo
    timestamp: float  # when first queued: the sort's tie-breaker
    attempts: int = 0
    last_attempt: float = 0.0
    unschedulable_plugins: frozenset[str] = field(default_factory=frozenset)
    since: float = 0.0  # when it became unschedulable

    def backoff_expiry(self) -> float:
        duration = INITIAL_BACKOFF
        for _ in range(1, self.attempts):
            duration = min(duration * 2, MAX_BACKOFF)
        return self.last_attempt + duration


def _spec_changed(old: Obj, new: Obj) -> bool:
    """isPodUpdated: anything beyond status, resourceVersion, generation and managedFields."""
    def strip(pod: Obj) -> Obj:
        metadata = {k: v for k, v in (pod.get("metadata") or {}).items()
                    if k not in ("resourceVersion", "generation", "managedFields")}
        return {"metadata": metadata, "spec": pod.get("spec")}
    return strip(old) != strip(new)


class SchedulingQueue:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._active: list[tuple[int, float, int, Key]] = []
        self._in_active: dict[Key, int] = {}  # key -> its live heap entry's sequence number
        self._backoff: dict[Key, asyncio.TimerHandle | None] = {}
        self._unschedulable: dict[Key, QueuedPod] = {}
        self._pods: dict[Key, QueuedPod] = {}
        self._sequence = itertools.count()
        self._ready = asyncio.Event()
        self.scheduling_cycle = 0
        self._move_request_cycle = -1
        self._closed = False

    def __len__(self) -> int:
        return len(self._in_active)

    def _push(self, queued: QueuedPod) -> None:
        key = queued.pod.key
        self._cancel_backoff(key)
        self._unschedulable.pop(key, None)
        sequence = next(self._sequence)
        self._in_active[key] = sequence
        heapq.heappush(self._active, (-queued.pod.priority, queued.timestamp, sequence, key))
        self._ready.set()

    def _cancel_backoff(self, key: Key) -> None:
        timer = self._backoff.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _to_backoff(self, queued: QueuedPod) -> None:
        key = queued.pod.key
        self._unschedulable.pop(key, None)
        self._cancel_backoff(key)
        delay = queued.backoff_expiry() - self._clock()
        if delay <= 0:
            self._push(queued)
            return
        self._backoff[key] = asyncio.get_running_loop().call_later(delay, self._backoff_done, key)

    def _backoff_done(self, key: Key) -> None:
        self._backoff.pop(key, None)
        queued = self._pods.get(key)
        if queued is not None and key not in self._in_active:
            self._push(queued)

    def add(self, pod: PodInfo) -> None:
        """A new Pod to schedule (or one whose queue place is unknown): to the active queue."""
        queued = self._pods.get(pod.key)
        if queued is None:
            queued = self._pods[pod.key] = QueuedPod(pod, self._clock())
        else:
            queued.pod = pod
        if pod.key not in self._in_active and pod.key not in self._backoff:
            self._push(queued)

    def update(self, old: Obj, pod: PodInfo) -> None:
        queued = self._pods.get(pod.key)
        if queued is None:
            self.add(pod)
            return
        queued.pod = pod
        if pod.key in self._unschedulable and _spec_changed(old, pod.raw):
            self._move([queued])

    def info(self, key: Key) -> PodInfo | None:
        queued = self._pods.get(key)
        return queued.pod if queued is not None else None

    def delete(self, key: Key) -> None:
        self._pods.pop(key, None)
        self._in_active.pop(key, None)
        self._cancel_backoff(key)
        self._unschedulable.pop(key, None)

    async def pop(self) -> QueuedPod:
        """The next Pod to schedule (a new scheduling cycle); waits for one. CancelledError once closed."""
        while True:
            while self._active:
                _, _, sequence, key = heapq.heappop(self._active)
                if self._in_active.get(key) != sequence:
                    continue
                del self._in_active[key]
                queued = self._pods[key]
                queued.attempts += 1
                queued.last_attempt = self._clock()
                self.scheduling_cycle += 1
                return queued
            self._ready.clear()
            await self._ready.wait()

    def failed(self, queued: QueuedPod, plugins: Iterable[str], cycle: int) -> None:
        """AddUnschedulableIfNotPresent: a Pod whose attempt (in `cycle`) failed for `plugins`."""
        key = queued.pod.key
        if self._pods.get(key) is not queued or key in self._in_active or key in self._backoff:
            return
        queued.unschedulable_plugins = frozenset(plugins)
        if self._move_request_cycle >= cycle:
            self._to_backoff(queued)
        else:
            queued.since = self._clock()
            self._unschedulable[key] = queued

    def done(self, key: Key) -> None:
        """The Pod is bound: it leaves the queue."""
        self.delete(key)

    def move_all(self, plugins: frozenset[str] | None) -> None:
        """A cluster event the `plugins` care for (None: every Pod) moves the unschedulable Pods it may help."""
        self._move([q for q in self._unschedulable.values()
                    if plugins is None or not q.unschedulable_plugins or q.unschedulable_plugins & plugins])

    def move_matching(self, wanted: Callable[[QueuedPod], bool]) -> None:
        self._move([q for q in self._unschedulable.values() if wanted(q)])

    def _move(self, pods: list[QueuedPod]) -> None:
        now = self._clock()
        for queued in pods:
            if queued.backoff_expiry() > now:
                self._to_backoff(queued)
            else:
                self._push(queued)
        self._move_request_cycle = self.scheduling_cycle

    def flush_leftover(self) -> None:
        now = self._clock()
        self._move([q for q in self._unschedulable.values() if now - q.since > UNSCHEDULABLE_TIMEOUT])

    def close(self) -> None:
        for timer in self._backoff.values():
            if timer is not None:
                timer.cancel()
        self._backoff.clear()
