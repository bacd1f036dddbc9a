"""A whole cluster's API life cycle on one `capstan serve --controllers='*' --nodes=3`, driven by the real kubectl:
nothing plays the kubelet but the simulated nodes, and every Pod is placed by the scheduler. A Deployment of 3
becomes Available and `kubectl rollout status` returns, a new image rolls out and `rollout undo` goes back; a
StatefulSet scales up and down in order; a DaemonSet has one Pod per node; a Job made from a CronJob completes; a
PodDisruptionBudget reports the disruptions allowed; a Service's EndpointSlice lists its ready Pods."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Capstan, Kubectl, serving_with

TIMEOUT = 90  # seconds: kubectl's waits, on a machine other work shares
NODES = {"capstan-node-0", "capstan-node-1", "capstan-node-2"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Capstan]:
    yield from serving_with(tmp_path_factory, "capstan-cluster", "--controllers=*", "--nodes=3",
                            "--node-pod-run-seconds=1")


@pytest.fixture
def kc(cluster: Capstan, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    return Kubectl(cluster.kubeconfig, tmp_path_factory.mktemp("kube-cache"))


def until(check: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.25)


def namespace(kc: Kubectl, name: str) -> None:
    ran = kc("create", "namespace", name)
    assert ran.code == 0, ran.err
    # the serviceaccount controller writes the default ServiceAccount Pods need
    until(lambda: kc("get", "serviceaccount", "default", "-n", name).code == 0, "a default ServiceAccount")


def test_three_ready_nodes(kc: Kubectl) -> None:
    nodes = until(lambda: [n for n in kc.json("get", "nodes", "-o", "json")["items"]
                           if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])]
                  or None, "three Ready nodes")
    assert len(nodes) == 3


def test_a_deployment_rolls_out_and_back(kc: Kubectl) -> None:
    ns = "deploy"
    namespace(kc, ns)
    ran = kc("create", "deployment", "web", "--image=nginx:1", "--replicas=3", "-n", ns)
    assert ran.code == 0, ran.err
    ran = kc("rollout", "status", "deployment/web", f"--timeout={TIMEOUT}s", "-n", ns, timeout=TIMEOUT + 10)
    assert ran.code == 0, ran.err
    assert 'deployment "web" successfully rolled out' in ran.out
    pods = kc.json("get", "pods", "-n", ns, "-o", "json")["items"]
    assert len(pods) == 3
    assert all(p["spec"].get("nodeName") in NODES for p in pods)  # bound by the scheduler
    assert all(p["status"]["phase"] == "Running" and p["status"].get("podIP") for p in pods)

    assert kc("set", "image", "deployment/web", "nginx=nginx:2", "-n", ns).code == 0
    ran = kc("rollout", "status", "deployment/web", f"--timeout={TIMEOUT}s", "-n", ns, timeout=TIMEOUT + 10)
    assert ran.code == 0, ran.err
    ran = kc("rollout", "undo", "deployment/web", "-n", ns)
    assert ran.code == 0, ran.err
    ran = kc("rollout", "status", "deployment/web", f"--timeout={TIMEOUT}s", "-n", ns, timeout=TIMEOUT + 10)
    assert ran.code == 0, ran.err
    image = kc.json("get", "deployment", "web", "-n", ns, "-o", "json")["spec"]["template"]["spec"]["containers"][0]
    assert image["image"] == "nginx:1"


STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: stateful}
spec:
  serviceName: web
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
"""


def test_a_statefulset_scales_up_and_down_in_order(kc: Kubectl) -> None:
    ns = "stateful"
    namespace(kc, ns)
    ran = kc("apply", "-f", "-", input=STATEFULSET)
    assert ran.code == 0, ran.err
    ran = kc("rollout", "status", "statefulset/web", f"--timeout={TIMEOUT}s", "-n", ns, timeout=TIMEOUT + 10)
    assert ran.code == 0, ran.err
    pods = sorted(kc.json("get", "pods", "-n", ns, "-o", "json")["items"],
                  key=lambda p: p["metadata"]["creationTimestamp"] + p["metadata"]["name"])
    # OrderedReady: each Pod created once the one before it is Ready
    assert [p["metadata"]["name"] for p in pods] == ["web-0", "web-1", "web-2"]
    assert kc("scale", "statefulset/web", "--replicas=1", "-n", ns).code == 0
    until(lambda: [p["metadata"]["name"] for p in kc.json("get", "pods", "-n", ns, "-o", "json")["items"]]
          == ["web-0"], "scaled down to web-0")


DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: daemons}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: busybox}]}
"""


def test_a_daemonset_has_one_pod_per_node(kc: Kubectl) -> None:
    ns = "daemons"
    namespace(kc, ns)
    ran = kc("apply", "-f", "-", input=DAEMONSET)
    assert ran.code == 0, ran.err
    ran = kc("rollout", "status", "daemonset/agent", f"--timeout={TIMEOUT}s", "-n", ns, timeout=TIMEOUT + 10)
    assert ran.code == 0, ran.err
    pods = kc.json("get", "pods", "-n", ns, "-o", "json")["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == sorted(NODES)


def test_a_job_from_a_cronjob_completes(kc: Kubectl) -> None:
    ns = "batch"
    namespace(kc, ns)
    ran = kc("create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *", "-n", ns)
    assert ran.code == 0, ran.err
    ran = kc("create", "job", "tick-now", "--from=cronjob/tick", "-n", ns)
    assert ran.code == 0, ran.err
    ran = kc("wait", "--for=condition=Complete", "job/tick-now", f"--timeout={TIMEOUT}s", "-n", ns,
             timeout=TIMEOUT + 10)
    assert ran.code == 0, ran.err
    job = kc.json("get", "job", "tick-now", "-n", ns, "-o", "json")
    assert job["status"]["succeeded"] == 1


def test_a_pdb_and_endpoint_slices_follow_ready_pods(kc: Kubectl) -> None:
    ns = "served"
    namespace(kc, ns)
    ran = kc("create", "deployment", "api", "--image=nginx", "--replicas=2", "--port=80", "-n", ns)
    assert ran.code == 0, ran.err
    assert kc("expose", "deployment", "api", "--port=80", "-n", ns).code == 0
    assert kc("create", "poddisruptionbudget", "api", "--selector=app=api", "--min-available=1", "-n", ns).code == 0
    ran = kc("rollout", "status", "deployment/api", f"--timeout={TIMEOUT}s", "-n", ns, timeout=TIMEOUT + 10)
    assert ran.code == 0, ran.err

    def allowed() -> Any:
        status = kc.json("get", "pdb", "api", "-n", ns, "-o", "json").get("status") or {}
        return status if status.get("currentHealthy") == 2 else None

    status = until(allowed, "the PodDisruptionBudget counting 2 healthy Pods")
    assert (status["disruptionsAllowed"], status["desiredHealthy"], status["expectedPods"]) == (1, 1, 2)

    ips = {p["status"]["podIP"] for p in kc.json("get", "pods", "-n", ns, "-o", "json")["items"]}

    def sliced() -> Any:
        slices = kc.json("get", "endpointslices", "-l", "kubernetes.io/service-name=api", "-n", ns,
                         "-o", "json")["items"]
        ready = {address for s in slices for e in s.get("endpoints") or []
                 if (e.get("conditions") or {}).get("ready") for address in e["addresses"]}
        return ready if ready == ips else None

    until(sliced, "the EndpointSlice listing both ready Pods")
