"""The kubelet's part for Jobs' Pods, played by the batch controllers' tests: every new Pod of a namespace is
started (Running, Ready) and then, as the test's `outcome(pod, n)` says, left running (None) or terminated with
that exit code: phase Succeeded for 0, Failed otherwise, the container's state `terminated` with exitCode and
finishedAt, as a kubelet reports it through pods/status.

    async with JobKubelet(client, "default", lambda pod, n: 0):   # every Pod succeeds
        ...
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from tests.server.client import Client, Failed, Obj, path
from tests.server.controllers.kubelet import WatchingKubelet, now

Outcome = Callable[[Obj, int], int | None]


def status_of(pod: Obj, exit_code: int | None, *, conditions: list[Obj] | None = None) -> Obj:
    """Running and Ready (exit_code None), or terminated with exit_code."""
    when = now()
    containers = (pod.get("spec") or {}).get("containers") or []
    running = exit_code is None
    flag = "True" if running else "False"
    if running:
        state: Obj = {"running": {"startedAt": when}}
    else:
        state = {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                                "startedAt": when, "finishedAt": when}}
    phase = "Running" if running else ("Succeeded" if exit_code == 0 else "Failed")
    return {
        "phase": phase, "podIP": "10.244.0.9", "hostIP": "10.0.0.1", "startTime": when,
        "conditions": [{"type": t, "status": s, "lastTransitionTime": when}
                       for t, s in (("Initialized", "True"), ("Ready", flag), ("ContainersReady", flag),
                                    ("PodScheduled", "True"))] + (conditions or []),
        "containerStatuses": [{"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": running,
                               "started": running, "restartCount": 0, "state": state} for c in containers]}


async def report(client: Client, namespace: str, name: str, exit_code: int | None, **extra: Any) -> None:
    current = await client.get(path("pods", namespace, name))
    current["status"] = status_of(current, exit_code, **extra)
    await client.update(path("pods", namespace, name, subresource="status"), current)


class JobKubelet(WatchingKubelet):
    def __init__(self, client: Client, namespace: str, outcome: Outcome) -> None:
        super().__init__(client, namespace)
        self._outcome = outcome
        self.seen: list[str] = []

    async def _run(self, started: asyncio.Event) -> None:
        pods = path("pods", self._namespace)
        meta, _ = await self._client.list(pods)
        started.set()
        async for kind, pod in self._client.watch(pods, resourceVersion=meta["resourceVersion"]):
            name = str(pod["metadata"]["name"])
            if kind != "ADDED" or name in self.seen or pod["metadata"].get("deletionTimestamp"):
                continue
            self.seen.append(name)
            with contextlib.suppress(Failed):
                await report(self._client, self._namespace, name, self._outcome(pod, len(self.seen) - 1))
