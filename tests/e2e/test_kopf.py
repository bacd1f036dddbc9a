"""A kopf operator (kopf from PyPI) against a real `capstan serve`.

The CRD is installed with kubectl; the operator runs in a subprocess with peering off (`--standalone`),
watching one namespace, as an operator author would run it. Its handlers record what they saw in the
object's status (patched through /status, as kopf does for a kind that has it) and post events; kopf keeps
its own finalizer and progress annotations on the object. A create, an update and a delete of a custom
object must each reach their handler, and every write kopf makes must persist. It runs twice: with kopf's
default watching (list, then watch from the list's resourceVersion) and with initial streaming
(`settings.watching.initial_streaming`: a watch with sendInitialEvents, which relies on bookmarks) against a
server started with `--feature-gates=WatchList=true`, as kube-apiserver 1.28 serves such watches only then.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Capstan, Kubectl, Obj, _Lines, serving_with

WAIT = 20.0  # seconds for the operator to react to a change
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"

OPERATOR = textwrap.dedent('''
    import os
    from pathlib import Path

    import kopf

    GROUP = os.environ["CAPSTAN_TEST_GROUP"]
    MARKS = Path(os.environ["CAPSTAN_TEST_MARKS"])


    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_):
        settings.watching.server_timeout = 10
        settings.watching.initial_streaming = os.environ.get("CAPSTAN_TEST_BOOKMARKS") == "1"


    @kopf.on.create(GROUP, "v1", "gizmos")
    def created(name, spec, patch, body, **_):
        patch.status["phase"] = "Created"
        patch.status["seenSize"] = spec.get("size")
        kopf.info(body, reason="GizmoCreated", message=f"created {name}")
        return {"size": spec.get("size")}


    @kopf.on.update(GROUP, "v1", "gizmos", field="spec.size")
    def updated(name, old, new, patch, body, **_):
        patch.status["phase"] = "Updated"
        patch.status["seenSize"] = new
        kopf.info(body, reason="GizmoUpdated", message=f"size {old} -> {new}")


    @kopf.on.delete(GROUP, "v1", "gizmos")
    def deleted(name, **_):
        MARKS.write_text(f"deleted {name}\\n")
''')


def crd_yaml(group: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gizmos.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                                   "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                               }}}}]},
    })


class Operator:
    """The kopf subprocess, its log read on a thread."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        assert proc.stdout is not None
        self.log = _Lines(proc.stdout)

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.log.rest()


@pytest.fixture(scope="module")
def watch_list(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Capstan]:
    yield from serving_with(tmp_path_factory, "capstan-watchlist", "--feature-gates=WatchList=true")


@pytest.fixture(params=["defaults", "bookmarks"])
def cluster(request: pytest.FixtureRequest, capstan: Capstan, kubectl: Kubectl, namespace: str,
            tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Capstan, Kubectl, str]:
    """(how kopf watches, the server, its kubectl, a fresh namespace): the session's server for kopf's default
    watching, one with kube's WatchList feature gate on for its initial streaming."""
    if request.param == "defaults":
        return request.param, capstan, kubectl, namespace
    gated: Capstan = request.getfixturevalue("watch_list")
    gated.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    return request.param, gated, Kubectl(gated.kubeconfig, tmp_path_factory.mktemp("kube-cache")), namespace


@pytest.fixture
def operator(cluster: tuple[str, Capstan, Kubectl, str], tmp_path: Path) -> Iterator[tuple[str, Path, Operator]]:
    watching, capstan, kubectl, namespace = cluster
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    ran = kubectl("apply", "-f", "-", input=crd_yaml(group))
    assert ran.code == 0, ran.err
    ran = kubectl("wait", "--for=condition=Established", f"crd/gizmos.{group}", "--timeout=10s")
    assert ran.code == 0, ran.err
    script = tmp_path / "operator.py"
    script.write_text(OPERATOR)
    marks = tmp_path / "marks.txt"
    env = {**os.environ, "KUBECONFIG": str(capstan.kubeconfig), "CAPSTAN_TEST_GROUP": group,
           "CAPSTAN_TEST_MARKS": str(marks), "CAPSTAN_TEST_BOOKMARKS": "1" if watching == "bookmarks" else "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kopf", "run", "--standalone", f"--namespace={namespace}", "--verbose", str(script)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    running = Operator(proc)
    try:
        yield group, marks, running
    finally:
        running.stop()
        kubectl("delete", "crd", f"gizmos.{group}", "--ignore-not-found", "--wait=false")


def eventually(check: Callable[[], Any], what: str, operator: Operator, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline or operator.proc.poll() is not None:
            pytest.fail(f"{what} did not happen within {timeout}s; operator log:\n{operator.stop()}")
        time.sleep(0.1)


def test_kopf_operator_handles_create_update_delete(operator: tuple[str, Path, Operator],
                                                    cluster: tuple[str, Capstan, Kubectl, str]) -> None:
    group, marks, running = operator
    _, capstan, kubectl, namespace = cluster
    body = yaml.safe_dump({"apiVersion": f"{group}/v1", "kind": "Gizmo", "metadata": {"name": "g1"},
                           "spec": {"size": 1}})
    assert kubectl("apply", "-n", namespace, "-f", "-", input=body).code == 0
    path = f"/apis/{group}/v1/namespaces/{namespace}/gizmos/g1"

    def current() -> Obj:
        code, obj = capstan.get(path)
        return obj if code == 200 else {}

    created = eventually(lambda: (o := current()).get("status", {}).get("phase") == "Created" and o,
                         "the create handler's status patch", running)
    assert created["status"]["seenSize"] == 1
    assert created["status"]["created"] == {"size": 1}  # the handler's result, stored by kopf
    assert FINALIZER in created["metadata"]["finalizers"]
    assert "kopf.zalando.org/last-handled-configuration" in created["metadata"]["annotations"]

    ran = kubectl("patch", f"gizmos.{group}", "g1", "-n", namespace, "--type=merge", "-p", '{"spec":{"size":2}}')
    assert ran.code == 0, ran.err
    updated = eventually(lambda: (o := current()).get("status", {}).get("phase") == "Updated" and o,
                         "the update handler's status patch", running)
    assert updated["status"]["seenSize"] == 2
    last = json.loads(updated["metadata"]["annotations"]["kopf.zalando.org/last-handled-configuration"])
    assert last["spec"] == {"size": 2}

    def events() -> list[Obj]:
        code, listed = capstan.get(f"/api/v1/namespaces/{namespace}/events")
        assert code == 200, listed
        return [e for e in listed["items"] if e["involvedObject"].get("name") == "g1"]

    eventually(lambda: {"GizmoCreated", "GizmoUpdated"} <= {e["reason"] for e in events()},
               "the handlers' events", running)
    mine = next(e for e in events() if e["reason"] == "GizmoUpdated")
    assert (mine["message"], mine["involvedObject"]["kind"], mine["involvedObject"]["apiVersion"]) == (
        "size 1 -> 2", "Gizmo", f"{group}/v1")

    ran = kubectl("delete", f"gizmos.{group}", "g1", "-n", namespace, "--wait=false")
    assert ran.code == 0, ran.err
    eventually(lambda: marks.exists() and marks.read_text() == "deleted g1\n", "the delete handler", running)
    eventually(lambda: capstan.get(path)[0] == 404, "the deletion once kopf removed its finalizer", running)
    assert running.proc.poll() is None, running.stop()
