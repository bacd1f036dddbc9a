"""The events.k8s.io/v1 recorder kube-scheduler records with (client-go tools/events), as its default profile
names itself: reportingController `default-scheduler`, reportingInstance `default-scheduler-<hostname>`.

Contracts, as client-go's:
- an Event is named `<regarding name>.<eventTime in Unix nanoseconds, hex>` in the regarding object's namespace;
  eventTime is the time of recording; the note is cut to 1024 characters (kube-scheduler's truncateMessage);
- a repeat of an Event with the same regarding object, action, reason and reportingController (the note is not
  compared) within 6 minutes is a series: the second occurrence writes series {count: 2, lastObservedTime};
  later ones count on in memory (client-go writes them on its 30-minute heartbeat, which is not run here);
- Events are written in order by one task, after the scheduler moves on; a failed write is logged and dropped.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from dataclasses import dataclass
from typing import Any

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.machinery.codec import gotime
from server.objects.core import Core
from server.runtime.tasks import cancel_all

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MANAGER = "kube-scheduler"
NOTE_LIMIT = 1024
SERIES_WINDOW = 6 * 60.0  # client-go's finishTime


def truncate(message: str) -> str:
    suffix = " ..."
    return message if len(message) <= NOTE_LIMIT else message[:NOTE_LIMIT - len(suffix)] + suffix


def micro_time(nanos: int) -> str:
    return gotime.format_micro(nanos // 10**9, nanos % 10**9)


def events_path(namespace: str, name: str = "") -> core_pb2.ResourcePath:
    return core_pb2.ResourcePath(group="events.k8s.io", version="v1", resource="events", namespace=namespace,
                                 name=name)


@dataclass
class _Recorded:
    namespace: str
    name: str
    count: int
    last: float  # monotonic


def _reference(pod: Obj) -> Obj:
    """A Pod's ObjectReference, as reference.GetReference makes it."""
    metadata = pod.get("metadata") or {}
    reference = {"kind": "Pod", "namespace": metadata.get("namespace"), "name": metadata.get("name"),
                 "uid": metadata.get("uid"), "apiVersion": "v1", "resourceVersion": metadata.get("resourceVersion")}
    return {k: v for k, v in reference.items() if v}


class Recorder:
    def __init__(self, core: Core, controller: str) -> None:
        self._core = core
        self.controller = controller
        self.instance = f"{controller}-{socket.gethostname()}"
        self._recorded: dict[tuple[str, str, str, str], _Recorded] = {}
        self._writes: asyncio.Queue[tuple[str, core_pb2.ResourcePath, bytes]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._write_all(), name="capstan-scheduler-events")

    async def stop(self) -> None:
        await cancel_all((self._task,))
        self._task = None

    async def idle(self) -> None:
        """Returns once every Event recorded so far is written (for tests and benchmarks)."""
        await self._writes.join()

    def record(self, regarding: Obj, type_: str, reason: str, action: str, note: str, *,
               related: Obj | None = None) -> None:
        metadata = regarding.get("metadata") or {}
        reference = _reference(regarding)
        namespace = str(metadata.get("namespace") or "default")
        key = (str(metadata.get("uid") or ""), action, reason, type_)
        now = time.monotonic()
        nanos = time.time_ns()
        seen = self._recorded.get(key)
        if seen is not None and now - seen.last <= SERIES_WINDOW:
            seen.count += 1
            seen.last = now
            if seen.count == 2:
                patch = {"series": {"count": 2, "lastObservedTime": micro_time(nanos)}}
                self._writes.put_nowait(("patch", events_path(seen.namespace, seen.name), orjson.dumps(patch)))
            return
        name = f"{metadata.get('name')}.{nanos:x}"
        self._recorded[key] = _Recorded(namespace, name, 1, now)
        event = {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(nanos), "reportingController": self.controller,
            "reportingInstance": self.instance, "action": action, "reason": reason,
            "regarding": reference, "note": truncate(note), "type": type_,
        }
        if related is not None:
            event["related"] = _reference(related)
        self._writes.put_nowait(("create", events_path(namespace), orjson.dumps(event)))

    def forget(self, uid: str) -> None:
        """The regarding object is gone: its series end."""
        for key in [k for k in self._recorded if k[0] == uid]:
            del self._recorded[key]

    async def _write_all(self) -> None:
        while True:
            verb, path, data = await self._writes.get()
            try:
                if verb == "create":
                    request = core_pb2.CreateRequest(path=path, object=core_pb2.RawObject(
                        encoding=core_pb2.ENCODING_JSON, data=data))
                    request.options.fieldManager = MANAGER
                    await self._core.create(request)
                else:
                    patch = core_pb2.PatchRequest(path=path, type=core_pb2.PATCH_TYPE_MERGE, patch=data)
                    patch.options.fieldManager = MANAGER
                    await self._core.patch(patch)
            except errors.ApiError as err:
                log.info("scheduler: writing an Event failed: %s", err.status.message)
            except Exception:
                log.exception("scheduler: writing an Event failed")
            finally:
                self._writes.task_done()
