"""core/v1 Events as client-go's event recorder writes them (tools/record: makeEvent, the EventCorrelator's
EventLogger, recordToSink), so `kubectl describe` and `kubectl get events` show a controller's steps as kube's.

Contracts:
- an Event is named `<involvedObject.name>.<hex of the Unix time in nanoseconds>` in the involved object's
  namespace ("default" for a cluster-scoped one), with involvedObject {kind, namespace, name, uid, apiVersion,
  resourceVersion}, reason, message, type (Normal or Warning), source.component, reportingComponent,
  firstTimestamp = lastTimestamp, count 1;
- a repeat (same source, involved object, type, reason and message) patches the Event already written: count
  + 1 and the new lastTimestamp (recordToSink's patch); an Event gone meanwhile is created again;
- similar Events (same source, involved object, type and reason, another message) are combined as client-go's
  EventAggregator does: from the tenth distinct message within ten minutes on, one Event with the message
  "(combined from similar events): <latest message>" is written and then counted;
- `event()` never blocks its caller and never fails it: Events are written in order by one task, a failed write
  is logged and dropped (client-go's sink gives up after its retries too);
- not done: client-go's per-object spam filter (a token bucket of 25 Events, one more every 5 minutes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.controllers.workload.keyed import MANAGER, Obj, decode, named, path, raw
from server.machinery import errors
from server.objects.core import Core
from server.runtime.tasks import cancel_all

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
CACHE_SIZE = 4096  # client-go's maxLruCacheEntries
SIMILAR_EVENTS = 10  # client-go's defaultAggregateMaxEvents
SIMILAR_INTERVAL = 600.0  # seconds: defaultAggregateIntervalInSeconds
COMBINED = "(combined from similar events): "
EventKey = tuple[str, str, str, str, str, str, str, str, str]


@dataclass(frozen=True, slots=True)
class _Similar:
    """An aggregate record: the distinct messages seen and when the last one was."""

    messages: frozenset[str]
    last: float


@dataclass(frozen=True, slots=True)
class _Seen:
    name: str
    namespace: str
    count: int
    first: str


def reference(obj: Obj, *, kind: str = "", api_version: str = "") -> Obj:
    """ref.GetReference: the involvedObject of an Event about obj."""
    metadata = obj.get("metadata") or {}
    ref: Obj = {"kind": kind or obj.get("kind", ""), "namespace": metadata.get("namespace", ""),
                "name": metadata.get("name", ""), "uid": metadata.get("uid", ""),
                "apiVersion": api_version or obj.get("apiVersion", ""),
                "resourceVersion": metadata.get("resourceVersion", "")}
    return {k: v for k, v in ref.items() if v}


def timestamp(now: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if now is None else now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    """client-go's EventRecorder for one component (its source.component: "replicaset-controller", ...)."""

    def __init__(self, core: Core, component: str) -> None:
        self._core = core
        self.component = component
        self._pending: asyncio.Queue[Obj] = asyncio.Queue()
        self._seen: OrderedDict[EventKey, _Seen] = OrderedDict()
        self._similar: OrderedDict[EventKey, _Similar] = OrderedDict()
        self._task: asyncio.Task[None] | None = None

    def event(self, obj: Obj, type_: str, reason: str, message: str, *, kind: str = "",
              api_version: str = "") -> None:
        """Record an Event about obj (kind and apiVersion from obj unless given)."""
        now = time.time()
        ref = reference(obj, kind=kind, api_version=api_version)
        stamp = timestamp(now)
        body: Obj = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{ref.get('name', '')}.{time.time_ns():x}",
                         "namespace": ref.get("namespace") or "default"},
            "involvedObject": ref, "reason": reason, "message": message, "type": type_,
            "source": {"component": self.component}, "firstTimestamp": stamp, "lastTimestamp": stamp,
            "count": 1, "reportingComponent": self.component, "reportingInstance": ""}
        self._pending.put_nowait(body)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._write_all(),
                                                                name=f"capstan-events-{self.component}")

    async def flush(self) -> None:
        """Wait until every Event recorded so far is written (or dropped)."""
        await self._pending.join()

    async def stop(self) -> None:
        """Write what is pending (a few seconds at most), then stop."""
        if self._task is not None and not self._task.done():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5.0):
                    await self._pending.join()
        await cancel_all((self._task,))
        self._task = None

    async def _write_all(self) -> None:
        while True:
            body = await self._pending.get()
            try:
                await self._write(body)
            except errors.ApiError as err:
                log.info("%s: event %s not written: %s", self.component, body["reason"], err.status.message)
            except Exception:
                log.exception("%s: event %s not written", self.component, body["reason"])
            finally:
                self._pending.task_done()

    def _aggregate(self, body: Obj) -> tuple[Obj, EventKey]:
        """EventAggregator.EventAggregate: the Event to write and the key it is counted under."""
        ref = body["involvedObject"]
        similar: EventKey = (self.component, "", ref.get("kind", ""), ref.get("namespace", ""), ref.get("name", ""),
                             ref.get("uid", ""), ref.get("apiVersion", ""), body["type"] + "\x00" + body["reason"], "")
        exact: EventKey = (*similar[:8], body["message"])
        now = time.time()
        record = self._similar.get(similar)
        if record is None or now - record.last > SIMILAR_INTERVAL:
            record = _Similar(frozenset(), now)
        messages = record.messages | {body["message"]}
        if len(messages) < SIMILAR_EVENTS:
            self._keep(self._similar, similar, _Similar(messages, now))
            return body, exact
        self._keep(self._similar, similar, _Similar(frozenset(list(messages)[1:]), now))
        return {**body, "message": COMBINED + body["message"]}, similar

    async def _write(self, body: Obj) -> None:
        body, key = self._aggregate(body)
        seen = self._seen.get(key)
        events = path("events", body["metadata"]["namespace"])
        if seen is not None:
            count = seen.count + 1
            patch = {"count": count, "lastTimestamp": body["lastTimestamp"], "message": body["message"]}
            request = core_pb2.PatchRequest(path=named(events, seen.name), type=core_pb2.PATCH_TYPE_STRATEGIC_MERGE,
                                            patch=raw(patch).data)
            request.options.fieldManager = MANAGER
            try:
                await self._core.patch(request)
                self._remember(key, _Seen(seen.name, seen.namespace, count, seen.first))
                return
            except errors.ApiError as err:
                if err.code != 404:
                    raise
            body = {**body, "count": count, "firstTimestamp": seen.first}
        request_create = core_pb2.CreateRequest(path=events, object=raw(body))
        request_create.options.fieldManager = MANAGER
        created = decode((await self._core.create(request_create)).object)
        metadata = created.get("metadata") or {}
        self._remember(key, _Seen(str(metadata.get("name", body["metadata"]["name"])),
                                  str(metadata.get("namespace", "")), int(body["count"]),
                                  str(body["firstTimestamp"])))

    def _remember(self, key: EventKey, seen: _Seen) -> None:
        self._keep(self._seen, key, seen)

    @staticmethod
    def _keep(cache: OrderedDict[EventKey, Any], key: EventKey, value: object) -> None:
        """An LRU of CACHE_SIZE entries, as client-go's caches."""
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > CACHE_SIZE:
            cache.popitem(last=False)
