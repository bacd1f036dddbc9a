"""The kubelet's last word on a Pod: once a gracefully deleted Pod's grace period ends, delete it for good.

A Pod bound to a node is not deleted at once: kube-apiserver marks it (deletionTimestamp = now + its grace period,
deletionGracePeriodSeconds) and the kubelet of that node stops its containers and then deletes it with a grace
period of 0. No kubelet runs here, so this controller plays that part without the containers: it follows Pods (a
shared informer) and, when a marked Pod's deletionTimestamp comes, deletes it with gracePeriodSeconds=0 and its uid
as precondition. A Pod still held by finalizers then waits for them, as anywhere else. Because its informer starts
with a list, Pods marked before a restart are deleted after it.

A Pod on a Node a simulator plays the kubelet of (annotated `capstan.io/simulated-node: "true"`,
server/controllers/kubelets/) is that simulator's to stop and delete, as a real kubelet's would be: the
terminator leaves it alone, so it waits for the node's kubelet, the node lifecycle controller or podgc.

Elected (server/runtime/election.py): it runs in the leading core only; a new leader's informer starts
with a list, so Pods marked under the previous leader are deleted by the next.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.machinery.codec import gotime
from server.objects.core import Core
from server.runtime.informer import Handlers, SharedInformers, Subscriptions
from server.runtime.worker import Worker
from server.runtime.workqueue import ExponentialBackoff, WorkQueue

log = logging.getLogger(__name__)

PODS = core_pb2.ResourcePath(version="v1", resource="pods")
NODES = core_pb2.ResourcePath(version="v1", resource="nodes")
SIMULATED = "capstan.io/simulated-node"  # server/controllers/kubelets/status.py's annotation
WORKERS = 8  # Pods deleted at once
Obj = dict[str, Any]
Item = tuple[str, str, str]  # a Pod's namespace, name and uid


class PodTerminator:
    """The Pods' informer queues each marked Pod for its deletionTimestamp (a delaying work queue); the workers
    delete it then if the cache still holds that Pod (same uid) marked."""

    def __init__(self, core: Core, informers: SharedInformers | None = None) -> None:
        self._core = core
        self._subscriptions = Subscriptions()
        shared = informers or SharedInformers(core)
        self._informer = self._subscriptions.add(
            shared.informer(PODS),
            Handlers(on_add=lambda pod, _: self._consider(pod), on_update=lambda _, pod: self._consider(pod)))
        self._nodes = self._subscriptions.add(shared.informer(NODES), Handlers())
        self._worker = self._new_worker()

    def _new_worker(self) -> Worker[Item]:
        return Worker(WorkQueue(ExponentialBackoff()), self._sync, name="capstan-pod-terminator", count=WORKERS)

    async def start(self) -> None:
        if self._worker.queue.shutting_down():
            self._worker = self._new_worker()  # a stopped terminator's queue was shut down
        await self._subscriptions.start()
        self._worker.start()

    async def stop(self) -> None:
        await self._subscriptions.stop()
        await self._worker.stop()

    def running(self) -> bool:
        """Started and not stopped or dead (its /healthz poststarthook check)."""
        return self._informer.running() and self._worker.running()

    def _consider(self, pod: Obj) -> None:
        delay = _due_in(pod)
        if delay is not None:
            m = pod["metadata"]
            self._worker.queue.add_after((str(m.get("namespace", "")), str(m.get("name", "")), str(m.get("uid", ""))),
                                         delay)

    async def _sync(self, item: Item) -> None:
        namespace, name, uid = item
        pod = self._informer.cache.get((namespace, name))
        if pod is None or str((pod.get("metadata") or {}).get("uid", "")) != uid:
            return  # deleted, or another Pod by that name now
        delay = _due_in(pod)
        if delay is None:
            return
        if delay > 0:  # queued for an earlier mark
            self._worker.queue.add_after(item, delay)
            return
        if self._simulated(pod):
            return  # its node's simulated kubelet stops and deletes it
        await self._delete_now(namespace, name, uid)

    async def _delete_now(self, namespace: str, name: str, uid: str) -> None:
        path = core_pb2.ResourcePath(version="v1", resource="pods", namespace=namespace, name=name)
        options = meta_pb2.DeleteOptions(gracePeriodSeconds=0, preconditions=meta_pb2.Preconditions(uid=uid))
        try:
            await self._core.delete(core_pb2.DeleteRequest(path=path, options=options))
        except errors.ApiError as err:
            if err.code not in (404, 409):  # gone already, or another Pod by that name now
                log.warning("deleting pod %s/%s after its grace period: %s", namespace, name, err)


    def _simulated(self, pod: Obj) -> bool:
        node = self._nodes.cache.get(("", str((pod.get("spec") or {}).get("nodeName") or "")))
        annotations = ((node or {}).get("metadata") or {}).get("annotations") or {}
        return annotations.get(SIMULATED) == "true"


def _due_in(pod: Obj) -> float | None:
    """Seconds until a marked Pod's grace period ends (0 when over); None for one not marked."""
    m = pod.get("metadata")
    if not isinstance(m, dict) or not m.get("deletionTimestamp") or not m.get("deletionGracePeriodSeconds"):
        return None
    seconds, _ = gotime.parse(str(m["deletionTimestamp"]), gotime.RFC3339)
    return max(0.0, seconds - time.time())
