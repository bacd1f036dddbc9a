"""Simulated nodes end to end, with the real kubectl: `capstan serve --nodes 3` (no workload controllers) shows three
Ready nodes and runs Pods bound to them; `capstan nodes --kubeconfig KC` plays the kubelets of a server that has
none, through its REST API.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from capstan.testing.nodes import HEARTBEAT, Heartbeats
from capstan.testing.server import LocalServer, start

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
Obj = dict[str, Any]


def kubectl(server: LocalServer, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(["kubectl", "--kubeconfig", str(server.kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def until(fetch: Callable[[], Any], check: Callable[[Any], bool], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = fetch()
        if check(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"last seen: {got}")
        time.sleep(0.2)


def ready_nodes(server: LocalServer) -> list[str]:
    nodes = json.loads(kubectl(server, "get", "nodes", "-o", "json"))["items"]
    return sorted(n["metadata"]["name"] for n in nodes
                  if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions") or []))


POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  nodeName: {node}
  containers: [{{name: app, image: "nginx:1.25"}}]
"""


def pod_is_ready(server: LocalServer, name: str) -> Obj:
    def fetch() -> Obj:
        result: Obj = json.loads(kubectl(server, "get", "pod", name, "-o", "json"))
        return result

    ready: Obj = until(fetch, lambda p: any(c["type"] == "Ready" and c["status"] == "True"
                                            for c in p["status"].get("conditions") or []))
    return ready


@pytest.fixture
def with_nodes(tmp_path: Path) -> Iterator[LocalServer]:
    server = start(tmp_path / "data", extra=("--nodes", "3"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def without_nodes(tmp_path: Path) -> Iterator[LocalServer]:
    server = start(tmp_path / "data")
    try:
        yield server
    finally:
        server.stop()


def test_serve_with_nodes_runs_pods(with_nodes: LocalServer) -> None:
    assert until(lambda: ready_nodes(with_nodes), lambda names: len(names) == 3) == \
        ["capstan-node-0", "capstan-node-1", "capstan-node-2"]
    table = kubectl(with_nodes, "get", "nodes")
    assert "Ready" in table and "v1.28.0" in table
    for i in range(3):
        kubectl(with_nodes, "apply", "-f", "-", stdin=POD.format(name=f"web-{i}", node=f"capstan-node-{i}"))
    ips = {pod_is_ready(with_nodes, f"web-{i}")["status"]["podIP"] for i in range(3)}
    assert len(ips) == 3
    assert "Running" in kubectl(with_nodes, "get", "pods")
    kubectl(with_nodes, "delete", "pod", "web-0", "--wait=true", "--timeout=20s")


NODE_BINDING = """apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: simulated-nodes}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:node"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:nodes"}]
"""


@pytest.mark.parametrize("as_nodes", [False, True], ids=["as-itself", "as-system-node"])
def test_capstan_nodes_as_a_client(without_nodes: LocalServer, tmp_path: Path, as_nodes: bool) -> None:
    if as_nodes:  # the nodes' group may write what kubelets write: the simulator impersonates each node
        kubectl(without_nodes, "apply", "-f", "-", stdin=NODE_BINDING)
    log_path = tmp_path / "nodes.log"
    log = log_path.open("wb")
    process = subprocess.Popen([sys.executable, "-m", "capstan", "nodes", "--kubeconfig", str(without_nodes.kubeconfig),
                                "--count", "2", "--node-name-prefix", "remote-"], stdout=log, stderr=log)
    try:
        assert until(lambda: ready_nodes(without_nodes), lambda names: len(names) == 2) == ["remote-0", "remote-1"]
        kubectl(without_nodes, "apply", "-f", "-", stdin=POD.format(name="far", node="remote-1"))
        assert pod_is_ready(without_nodes, "far")["status"]["hostIP"] == "172.20.0.3"
        kubectl(without_nodes, "delete", "pod", "far", "--wait=true", "--timeout=20s")
    finally:
        process.terminate()
        process.wait(10)
        log.close()
    writer = "system:node:<name>" if as_nodes else "the kubeconfig's user"
    assert f"writing as {writer}" in log_path.read_text()


def test_heartbeats_stopped_and_resumed_by_the_fixtures_helper(with_nodes: LocalServer) -> None:
    from kubernetes import config

    until(lambda: ready_nodes(with_nodes), lambda names: len(names) == 3)
    api = config.new_client_from_config(str(with_nodes.kubeconfig))  # type: ignore[no-untyped-call]
    try:
        heartbeats = Heartbeats(api)
        heartbeats.stop("capstan-node-2")

        def annotations() -> dict[str, str]:
            node = json.loads(kubectl(with_nodes, "get", "node", "capstan-node-2", "-o", "json"))
            return dict(node["metadata"].get("annotations") or {})

        assert annotations()[HEARTBEAT] == "stopped"
        heartbeats.resume_all()
        assert HEARTBEAT not in annotations()
    finally:
        api.close()
