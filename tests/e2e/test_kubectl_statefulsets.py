"""The real kubectl against a `capstan serve` running the statefulset and daemonset controllers: `rollout status`
waits on the status the controllers write, `scale` goes through /scale, `rollout history` and `rollout undo` read
and apply the ControllerRevisions they keep. The test plays the scheduler and the kubelet (a thread binding each
DaemonSet Pod to the node its affinity names and marking each Pod Running and Ready through pods/status).
Expected output is kubectl's against kube-apiserver 1.28."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capstan.testing import server
from tests.e2e.conftest import Kubectl

# nodelifecycle lifts the not-ready taint TaintNodesByCondition gives a new Node, as in a cluster
CONTROLLERS = "--controllers=garbagecollector,namespace,serviceaccount,statefulset,daemonset,nodelifecycle"
MANIFEST = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  replicas: 2
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: "nginx:1.25"}], terminationGracePeriodSeconds: 0}
"""


DAEMON_SET = """\
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: "agent:1"}], terminationGracePeriodSeconds: 0}
"""


class Kubelet(threading.Thread):
    """Binds every unbound Pod of `default` whose node affinity names a node, and marks every Pod without an IP
    Running and Ready, over plain HTTP."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.done = threading.Event()

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())

    def run(self) -> None:
        n = 0
        while not self.done.is_set():
            try:
                for pod in self.request("GET", "/api/v1/namespaces/default/pods")["items"]:
                    if pod.get("status", {}).get("podIP") or pod["metadata"].get("deletionTimestamp"):
                        continue
                    n += 1
                    name = pod["metadata"]["name"]
                    terms = pod["spec"].get("affinity", {}).get("nodeAffinity", {}).get(
                        "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
                    if terms and not pod["spec"].get("nodeName"):
                        node = terms[0]["matchFields"][0]["values"][0]
                        self.request("POST", f"/api/v1/namespaces/default/pods/{name}/binding", {
                            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                            "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
                        pod = self.request("GET", f"/api/v1/namespaces/default/pods/{name}")
                    pod["status"] = {"phase": "Running", "podIP": f"10.244.0.{n % 250 + 1}",
                                     "conditions": [{"type": "Ready", "status": "True"}]}
                    self.request("PUT", f"/api/v1/namespaces/default/pods/{name}/status", pod)
            except OSError:
                pass
            time.sleep(0.05)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kubectl, Kubelet]]:
    base = tmp_path_factory.mktemp("stateful")
    running = server.start(base / "data", insecure=True, extra=(CONTROLLERS,))
    kubelet = Kubelet(running.url)
    kubelet.start()
    try:
        yield Kubectl(running.kubeconfig, Path(base / "cache")), kubelet
    finally:
        kubelet.done.set()
        running.stop()


def test_rollout_scale_history_and_undo(served: tuple[Kubectl, Kubelet]) -> None:
    kubectl, _ = served
    assert kubectl("apply", "-f", "-", input=MANIFEST).code == 0
    ran = kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    assert (ran.code, ran.out.splitlines()[-1]) == (0, "partitioned roll out complete: 2 new pods have been updated...")
    assert kubectl("scale", "statefulset", "web", "--replicas=3") == (0, "statefulset.apps/web scaled\n", "")
    ran = kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    assert ran.out.splitlines()[-1] == "partitioned roll out complete: 3 new pods have been updated..."
    assert kubectl("set", "image", "statefulset/web", "nginx=nginx:1.26").code == 0
    ran = kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    assert ran.out.splitlines()[-1] == "partitioned roll out complete: 3 new pods have been updated..."
    history = kubectl("rollout", "history", "statefulset/web")
    assert history.code == 0 and [line.split()[0] for line in history.out.splitlines()[2:] if line.strip()] == [
        "1", "2"]
    assert kubectl("rollout", "undo", "statefulset/web") == (0, "statefulset.apps/web rolled back\n", "")
    kubectl("rollout", "status", "statefulset/web", "--timeout=30s")
    deadline = time.monotonic() + 30
    while True:
        pods = kubectl.json("get", "pods", "-l", "app=web", "-o", "json")["items"]
        images = sorted(p["spec"]["containers"][0]["image"] for p in pods if not p["metadata"].get("deletionTimestamp"))
        if images == ["nginx:1.25"] * 3:
            break
        assert time.monotonic() < deadline, images
        time.sleep(0.1)
    history = kubectl("rollout", "history", "statefulset/web")
    assert [line.split()[0] for line in history.out.splitlines()[2:] if line.strip()] == ["2", "3"]


def test_daemon_set_rollout_status(served: tuple[Kubectl, Kubelet]) -> None:
    kubectl, _ = served
    assert kubectl("apply", "-f", "-", input=DAEMON_SET).code == 0
    ran = kubectl("rollout", "status", "daemonset/agent", "--timeout=30s")
    assert (ran.code, ran.out.splitlines()[-1]) == (0, 'daemon set "agent" successfully rolled out')
    assert kubectl("set", "image", "daemonset/agent", "agent=agent:2").code == 0
    ran = kubectl("rollout", "status", "daemonset/agent", "--timeout=30s")
    assert (ran.code, ran.out.splitlines()[-1]) == (0, 'daemon set "agent" successfully rolled out')
    pods = kubectl.json("get", "pods", "-l", "app=agent", "-o", "json")["items"]
    assert [(p["spec"]["nodeName"], p["spec"]["containers"][0]["image"]) for p in pods
            if not p["metadata"].get("deletionTimestamp")] == [("node-1", "agent:2")]
