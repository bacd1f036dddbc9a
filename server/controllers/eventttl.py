"""Events expire, as kube-apiserver's `--event-ttl` (1 h by default) makes them: an Event is removed that long
after it was last written, so a long-running server's Events do not grow without bound.

kube-apiserver attaches an etcd lease of the TTL to every write of an Event. Here the elected core follows the
Events (core/v1 and events.k8s.io/v1 share them) and deletes each one once its TTL has passed since its last write,
with its resourceVersion as the precondition, so an Event written again meanwhile is kept for another TTL. Its last
write is read from the object itself — the latest of its managedFields' times (the server sets them on every
write), its creationTimestamp, lastTimestamp, eventTime and series.lastObservedTime — so a restart neither
forgets nor extends it. A TTL of 0 keeps Events for ever.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.workload.keyed import Key, KeyedController, Obj, key_of, named, path
from server.controllers.workload.pods import parse_time
from server.machinery import errors
from server.objects.core import Core
from server.runtime.election import Singleton
from server.runtime.informer import SharedInformers

DEFAULT_TTL = 3600.0  # kube-apiserver's --event-ttl
EVENTS = path("events")


def last_written(event: Obj) -> float | None:
    """The Unix time the Event was last written, as far as the object tells; None when it tells nothing."""
    meta = event.get("metadata") or {}
    times = [parse_time(entry.get("time")) for entry in meta.get("managedFields") or [] if isinstance(entry, dict)]
    times += [parse_time(meta.get("creationTimestamp")), parse_time(event.get("lastTimestamp")),
              parse_time(event.get("eventTime")), parse_time((event.get("series") or {}).get("lastObservedTime"))]
    known = [t for t in times if t is not None]
    return max(known) if known else None


class EventExpirer(KeyedController):
    name = "event-ttl"

    def __init__(self, core: Core, informers: SharedInformers | None = None, *, ttl: float = DEFAULT_TTL,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(core, informers)
        self.ttl = ttl
        self.clock = clock
        self.events = self.follow(EVENTS, self._changed)

    def _changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is not None:
            self.queue(key_of(new))

    def due_in(self, event: Obj) -> float | None:
        """Seconds until the Event expires (<= 0: it has); None for one that tells no time (every stored Event has
        its creationTimestamp), which is kept."""
        written = last_written(event)
        return None if written is None else written + self.ttl - self.clock()

    async def sync(self, key: Key) -> None:
        event = self.events.get(key)
        if event is None:
            return
        left = self.due_in(event)
        if left is None:
            return
        if left > 0:
            self.queue_after(key, left)
            return
        request = core_pb2.DeleteRequest(path=named(path("events", key[0]), key[1]))
        request.options.preconditions.resourceVersion = str((event.get("metadata") or {}).get("resourceVersion", ""))
        try:
            await self.core.delete(request)
        except errors.ApiError as err:
            if err.code not in (404, 409):  # gone already, or written again: its change queues it anew
                raise


def singletons(core: Core, informers: SharedInformers | None, ttl: float) -> list[Singleton]:
    """The expirer, while this core leads; none with a TTL of 0."""
    if ttl <= 0:
        return []
    expirer = EventExpirer(core, informers, ttl=ttl)
    return [Singleton("EventExpirer", expirer.start, expirer.stop)]
