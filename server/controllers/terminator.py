"""The kubelet's last word on a Pod: once a gracefully deleted Pod's grace period ends, delete it for good.

A Pod bound to a node is not deleted at once: kube-apiserver marks it (deletionTimestamp = now + its grace
period, deletionGracePeriodSeconds) and the kubelet of that node stops its containers and then deletes it
with a grace period of 0. No kubelet runs here, so this controller plays that part without the containers:
it watches Pods and, when a marked Pod's deletionTimestamp comes, deletes it with gracePeriodSeconds=0 and its
uid as precondition. A Pod still held by finalizers then waits for them, as anywhere else. Because it works
from a watch (which starts with a list), Pods marked before a restart are deleted after it.

Elected (server/runtime/election.py): it runs in the leading core only; a new leader's watch starts with
a list, so Pods marked under the previous leader are deleted by the next.
"""

from __future__ import annotations

import asyncio
import logging
import time

import orjson

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server import errors
from server.codec import gotime
from server.core import Core
from server.runtime.tasks import cancel_all

log = logging.getLogger(__name__)

PODS = core_pb2.ResourcePath(version="v1", resource="pods")


class PodTerminator:
    def __init__(self, core: Core) -> None:
        self._core = core
        self._timers: dict[str, asyncio.TimerHandle] = {}  # pod uid -> its deletion
        self._deleting: set[asyncio.Task[None]] = set()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._timers = {}  # a stopped terminator's were cancelled
        self._task = asyncio.get_running_loop().create_task(self._run(), name="capstan-pod-terminator")

    async def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        await cancel_all((self._task, *self._deleting))

    def running(self) -> bool:
        """Started and not stopped or dead (its /healthz poststarthook check)."""
        return self._task is not None and not self._task.done()

    async def _run(self) -> None:
        while True:
            try:
                async for response in self._core.watch(core_pb2.WatchRequest(path=PODS)):
                    for event in response.events:
                        if event.type in ("ADDED", "MODIFIED", "DELETED"):
                            self._consider(event.type, orjson.loads(event.object.data))
            except errors.ApiError as err:
                log.warning("pod watch ended: %s", err)
            await asyncio.sleep(0.1)  # the watch ended (dropped as too slow, say): watch again

    def _consider(self, kind: str, pod: dict[str, object]) -> None:
        m = pod.get("metadata")
        if not isinstance(m, dict):
            return
        uid = str(m.get("uid", ""))
        timer = self._timers.pop(uid, None)
        if timer is not None:
            timer.cancel()
        if kind == "DELETED" or not m.get("deletionTimestamp") or not m.get("deletionGracePeriodSeconds"):
            return
        seconds, _ = gotime.parse(str(m["deletionTimestamp"]), gotime.RFC3339)
        delay = max(0.0, seconds - time.time())
        namespace, name = str(m.get("namespace", "")), str(m.get("name", ""))
        self._timers[uid] = asyncio.get_running_loop().call_later(delay, self._delete, namespace, name, uid)

    def _delete(self, namespace: str, name: str, uid: str) -> None:
        self._timers.pop(uid, None)
        task = asyncio.get_running_loop().create_task(self._delete_now(namespace, name, uid))
        self._deleting.add(task)
        task.add_done_callback(self._deleting.discard)

    async def _delete_now(self, namespace: str, name: str, uid: str) -> None:
        path = core_pb2.ResourcePath(version="v1", resource="pods", namespace=namespace, name=name)
        options = meta_pb2.DeleteOptions(gracePeriodSeconds=0, preconditions=meta_pb2.Preconditions(uid=uid))
        try:
            await self._core.delete(core_pb2.DeleteRequest(path=path, options=options))
        except errors.ApiError as err:
            if err.code not in (404, 409):  # gone already, or another Pod by that name now
                log.warning("deleting pod %s/%s after its grace period: %s", namespace, name, err)
