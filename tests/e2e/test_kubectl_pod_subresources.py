"""kubectl against pods/log and pods/eviction: `kubectl logs` of a Pod on no node prints nothing and succeeds, as
against kube-apiserver 1.28 (its 204), and `kubectl drain` cordons a Node and evicts the Pods bound to it."""

from __future__ import annotations

from tests.e2e.conftest import Capstan, Kubectl


def _pod(capstan: Capstan, namespace: str, name: str) -> None:
    capstan.create(f"/api/v1/namespaces/{namespace}/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})


def test_logs_of_an_unbound_pod_are_empty(capstan: Capstan, kubectl: Kubectl, namespace: str) -> None:
    _pod(capstan, namespace, "p")
    ran = kubectl("logs", "p", "-n", namespace)
    assert (ran.code, ran.out) == (0, ""), ran.err


def test_drain_evicts_the_pods_of_a_node(capstan: Capstan, kubectl: Kubectl, namespace: str) -> None:
    node = f"drain-{namespace}"
    capstan.create("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    for name in ("a", "b"):
        _pod(capstan, namespace, name)
        capstan.create(f"/api/v1/namespaces/{namespace}/pods/{name}/binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"kind": "Node", "name": node}})
    ran = kubectl("drain", node, "--force", "--grace-period=1", "--timeout=60s")
    assert ran.code == 0, ran.err
    assert f"evicting pod {namespace}/a" in ran.err + ran.out
    assert f"node/{node} drained" in ran.out
    assert capstan.get(f"/api/v1/namespaces/{namespace}/pods/a")[0] == 404
    assert capstan.get(f"/api/v1/nodes/{node}")[1]["spec"]["unschedulable"] is True


def test_get_componentstatuses(kubectl: Kubectl) -> None:
    """`kubectl get cs` prints kube's columns and deprecation warning: no scheduler, the store healthy."""
    ran = kubectl("get", "cs")
    assert ran.code == 0, ran.err
    assert "Warning: v1 ComponentStatus is deprecated in v1.19+" in ran.err
    lines = ran.out.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "MESSAGE", "ERROR"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["etcd-0"] == ["Healthy", "ok"]
    assert rows["scheduler"][:2] == ["Unhealthy", 'Get']
    assert rows["controller-manager"][0] in ("Healthy", "Unhealthy")


def test_proxy_to_a_pod_without_an_ip(capstan: Capstan, kubectl: Kubectl, namespace: str) -> None:
    _pod(capstan, namespace, "p")
    ran = kubectl("get", "--raw", f"/api/v1/namespaces/{namespace}/pods/p/proxy/healthz")
    assert ran.code == 1
    assert "address not allowed" in ran.err


def test_debug_adds_an_ephemeral_container(capstan: Capstan, kubectl: Kubectl, namespace: str) -> None:
    """`kubectl debug` (without -it) sends its strategic merge patch to pods/ephemeralcontainers; the Pod then
    carries the defaulted container, targeting the one named; one named as the Pod's container is refused."""
    _pod(capstan, namespace, "p")
    ran = kubectl("debug", "pod/p", "-n", namespace, "--image=busybox:1.36", "-c", "dbg", "--target=c")
    assert ran.code == 0, ran.err
    code, pod = capstan.get(f"/api/v1/namespaces/{namespace}/pods/p")
    assert code == 200
    [added] = pod["spec"]["ephemeralContainers"]
    assert (added["name"], added["image"], added["targetContainerName"]) == ("dbg", "busybox:1.36", "c")
    assert (added["imagePullPolicy"], added["terminationMessagePath"]) == ("IfNotPresent", "/dev/termination-log")
    assert [c["name"] for c in pod["spec"]["containers"]] == ["c"]
    again = kubectl("debug", "pod/p", "-n", namespace, "--image=busybox", "-c", "c")
    assert again.code == 1
    assert 'spec.ephemeralContainers[1].name: Duplicate value: "c"' in again.err
