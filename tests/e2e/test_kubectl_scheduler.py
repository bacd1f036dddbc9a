"""kubectl against a `capstan serve --controllers=*`: a Pod is bound by the scheduler (`kubectl wait
--for=condition=PodScheduled` returns, `kubectl get -o wide` shows its Node, `kubectl describe` its Scheduled
event), and a Pod no Node fits is described with kube's FailedScheduling message."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Capstan, Kubectl, serving_with

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1",
                                                          "labels": {"kubernetes.io/hostname": "worker-1"}},
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                   "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, cpu: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}}


@pytest.fixture(scope="module", name="scheduling")
def scheduling_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Capstan, Kubectl]]:
    for capstan in serving_with(tmp_path_factory, "capstan-scheduler", "--controllers=*"):
        yield capstan, Kubectl(capstan.kubeconfig, capstan.data_dir.parent / "cache")


def test_kubectl_sees_a_pod_scheduled_and_one_that_is_not(scheduling: tuple[Capstan, Kubectl]) -> None:
    _, kubectl = scheduling
    ran = kubectl("create", "-f", "-", input=json.dumps(NODE))
    assert ran.code == 0, ran.err
    assert kubectl("create", "-f", "-", input=json.dumps(pod("web", "500m"))).code == 0
    ran = kubectl("wait", "--for=condition=PodScheduled", "pod/web", "--timeout=20s")
    assert ran.code == 0, ran.err
    wide = kubectl("get", "pod", "web", "-o", "wide")
    assert "worker-1" in wide.out.splitlines()[1]
    described = kubectl("describe", "pod", "web")
    assert "Successfully assigned default/web to worker-1" in described.out
    assert "default-scheduler" in described.out

    assert kubectl("create", "-f", "-", input=json.dumps(pod("big", "3"))).code == 0
    ran = kubectl("wait", "--for=condition=PodScheduled=false", "pod/big", "--timeout=20s")
    assert ran.code == 0, ran.err
    described = kubectl("describe", "pod", "big")
    assert "FailedScheduling" in described.out
    assert ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption "
            "victims found for incoming pod.." in " ".join(described.out.split()))
