"""A kubelet played over HTTP for the e2e tests that run the workload controllers without simulated nodes: it
polls a namespace's Pods and reports each through pods/status, Running and Ready or finished with exit code 0."""

from __future__ import annotations

import threading

from tests.e2e.conftest import Capstan
from tests.server.controllers.batchkubelet import status_of


class HttpKubelet:
    """Runs every Pod of a namespace through pods/status, polling over HTTP: to exit code 0 (`finish`), or
    Running and Ready."""

    def __init__(self, capstan: Capstan, namespace: str, *, finish: bool) -> None:
        self._capstan = capstan
        self._base = f"/api/v1/namespaces/{namespace}/pods"
        self._finish = finish
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> HttpKubelet:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            code, listed = self._capstan.request("GET", self._base)
            if code != 200:
                continue
            for pod in listed.get("items") or []:
                if pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("podIP"):
                    continue
                pod["status"] = status_of(pod, 0 if self._finish else None)
                self._capstan.request("PUT", f"{self._base}/{pod['metadata']['name']}/status", pod)
