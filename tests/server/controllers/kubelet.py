"""The kubelet's part, played by tests until simulated nodes run Pods: a Pod marked Running and Ready (or not
ready) through pods/status, as a kubelet reports it (phase, podIP, conditions, containerStatuses), and a
`Kubelet` that does so for every Pod of a namespace as it appears.

    async with Kubelet(client, "default"):   # every Pod created meanwhile becomes Ready
        ...

A Pod labelled `kubelet.test/ready: "false"` (from its template) is reported Running but not ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from tests.server.client import Client, Failed, Obj, path

NOT_READY_LABEL = "kubelet.test/ready"
_ips = itertools.count(1)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def running_status(pod: Obj, *, ready: bool = True, ip: str | None = None, since: str | None = None) -> Obj:
    """The status a kubelet reports for a started Pod."""
    n = next(_ips)
    address = ip or f"10.244.{n // 250}.{n % 250 + 1}"
    when = since or now()
    flag = "True" if ready else "False"
    containers = (pod.get("spec") or {}).get("containers") or []
    return {
        "phase": "Running", "podIP": address, "podIPs": [{"ip": address}], "hostIP": "10.0.0.1",
        "startTime": when,
        "conditions": [{"type": t, "status": s, "lastTransitionTime": when, "lastProbeTime": None}
                       for t, s in (("Initialized", "True"), ("Ready", flag), ("ContainersReady", flag),
                                    ("PodScheduled", "True"))],
        "containerStatuses": [
            {"name": c.get("name"), "image": c.get("image"), "imageID": f"docker.io/library/{c.get('image')}@sha256:0",
             "containerID": f"containerd://{n:064x}", "ready": ready, "started": True, "restartCount": 0,
             "state": {"running": {"startedAt": when}}} for c in containers]}


async def mark(client: Client, namespace: str, name: str, *, ready: bool = True, ip: str | None = None,
               since: str | None = None) -> Obj:
    """Report the Pod Running (and Ready unless ready=False) through pods/status."""
    current = await client.get(path("pods", namespace, name))
    current["status"] = running_status(current, ready=ready, ip=ip, since=since)
    updated, _ = await client.update(path("pods", namespace, name, subresource="status"), current)
    return updated


class WatchingKubelet:
    """A task following a namespace's Pods while the `async with` lasts: entered once `_run` has listed them
    (it sets `started`), cancelled on exit."""

    def __init__(self, client: Client, namespace: str) -> None:
        self._client = client
        self._namespace = namespace
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        started = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(started))
        await started.wait()
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self, started: asyncio.Event) -> None:
        raise NotImplementedError


class Kubelet(WatchingKubelet):
    """Marks every Pod of `namespace` Running and Ready as it appears (not ready when labelled so)."""

    def __init__(self, client: Client, namespace: str) -> None:
        super().__init__(client, namespace)
        self.marked: set[str] = set()

    async def _run(self, started: asyncio.Event) -> None:
        pods = path("pods", self._namespace)
        meta, items = await self._client.list(pods)
        for pod in items:
            await self._maybe_mark(pod)
        started.set()
        async for kind, pod in self._client.watch(pods, resourceVersion=meta["resourceVersion"]):
            if kind in ("ADDED", "MODIFIED"):
                await self._maybe_mark(pod)

    async def _maybe_mark(self, pod: Obj) -> None:
        metadata: dict[str, Any] = pod.get("metadata") or {}
        name = str(metadata.get("name"))
        if name in self.marked or metadata.get("deletionTimestamp") or (pod.get("status") or {}).get("podIP"):
            return
        self.marked.add(name)
        ready = (metadata.get("labels") or {}).get(NOT_READY_LABEL) != "false"
        with contextlib.suppress(Failed):
            await mark(self._client, self._namespace, name, ready=ready)
