"""`kubectl rollout` against a real `capstan serve --controllers=*`, the test playing the kubelet (every Pod is
reported Running and Ready as it appears): a Deployment of 3 becomes Available and `kubectl rollout status`
returns; `kubectl set image` rolls out; `rollout history` lists the revisions; `rollout undo` goes back (kubectl
1.28+ patches the template from the old ReplicaSet); `kubectl scale` and `rollout restart` complete too. A
DaemonSet's and a StatefulSet's `rollout undo` to the current revision is skipped, as kubectl matches the
ControllerRevision's bytes."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Capstan, Kubectl, serving_with
from tests.e2e.httpkubelet import HttpKubelet

TIMEOUT = "60s"


@pytest.fixture(scope="module")
def controlled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Capstan]:
    yield from serving_with(tmp_path_factory, "capstan-controllers", "--controllers=*")


@pytest.fixture
def kc(controlled: Capstan, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    return Kubectl(controlled.kubeconfig, tmp_path_factory.mktemp("kube-cache"))


def test_rollout_status_history_undo(kc: Kubectl, controlled: Capstan) -> None:
    ns = "rollout"
    assert kc("create", "namespace", ns).code == 0
    with HttpKubelet(controlled, ns, finish=False):
        ran = kc("create", "deployment", "web", "--image=nginx:1", "--replicas=3", "-n", ns)
        assert ran.code == 0, ran.err
        ran = kc("rollout", "status", "deployment/web", f"--timeout={TIMEOUT}", "-n", ns, timeout=70)
        assert ran.code == 0, ran.err
        assert 'deployment "web" successfully rolled out' in ran.out
        ran = kc("wait", "--for=condition=Available", "deployment/web", "--timeout=30s", "-n", ns)
        assert ran.code == 0, ran.err

        assert kc("set", "image", "deployment/web", "nginx=nginx:2", "-n", ns).code == 0
        ran = kc("rollout", "status", "deployment/web", f"--timeout={TIMEOUT}", "-n", ns, timeout=70)
        assert ran.code == 0, ran.err
        history = kc("rollout", "history", "deployment/web", "-n", ns)
        assert history.code == 0, history.err
        revisions = [line.split()[0] for line in history.out.splitlines()[2:] if line.strip()]
        assert revisions == ["1", "2"]

        ran = kc("rollout", "undo", "deployment/web", "-n", ns)
        assert ran.code == 0, ran.err
        assert "rolled back" in ran.out
        ran = kc("rollout", "status", "deployment/web", f"--timeout={TIMEOUT}", "-n", ns, timeout=70)
        assert ran.code == 0, ran.err
        d = kc.json("get", "deployment", "web", "-n", ns, "-o", "json")
        assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
        history = kc("rollout", "history", "deployment/web", "-n", ns)
        assert [line.split()[0] for line in history.out.splitlines()[2:] if line.strip()] == ["2", "3"]

        assert kc("scale", "deployment/web", "--replicas=1", "-n", ns).code == 0
        assert kc("rollout", "restart", "deployment/web", "-n", ns).code == 0
        ran = kc("rollout", "status", "deployment/web", f"--timeout={TIMEOUT}", "-n", ns, timeout=70)
        assert ran.code == 0, ran.err
        d = kc.json("get", "deployment", "web", "-n", ns, "-o", "json")
        assert d["status"]["replicas"] == d["status"]["availableReplicas"] == 1
        assert "kubectl.kubernetes.io/restartedAt" in d["spec"]["template"]["metadata"]["annotations"]



@pytest.mark.parametrize("kind", ["DaemonSet", "StatefulSet"])
def test_rollout_undo_to_the_current_revision_is_skipped(kc: Kubectl, kind: str) -> None:
    """kubectl compares the ControllerRevision's bytes with the patch it computes from the object (daemonSetMatch,
    statefulsetMatch): the revision the controller wrote for the current template matches it."""
    ns = f"undo-{kind.lower()}"
    assert kc("create", "namespace", ns).code == 0
    spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "a"}},
                            "template": {"metadata": {"labels": {"app": "a"}},
                                         "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}
    if kind == "StatefulSet":
        spec.update(serviceName="a", replicas=0)
    manifest = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "a", "namespace": ns}, "spec": spec}
    ran = kc("apply", "-f", "-", input=json.dumps(manifest))
    assert ran.code == 0, ran.err
    deadline = time.monotonic() + 30
    while not kc.json("get", "controllerrevisions", "-n", ns, "-o", "json")["items"]:
        assert time.monotonic() < deadline, "no ControllerRevision written"
        time.sleep(0.1)
    ran = kc("rollout", "undo", f"{kind.lower()}/a", "--to-revision=1", "-n", ns)
    assert ran.code == 0, ran.err
    assert "skipped rollback (current template already matches revision 1)" in ran.out
