"""The real kubectl against a real `capstan serve` for the core/v1 kinds: create (kubectl 1.32 sends these
bodies as protobuf), run, get (table, -o wide, -o yaml), describe and delete.

Expected tables are kubectl's own rendering of the columns kube-apiserver 1.32 sends.
"""

from __future__ import annotations

import ipaddress
import re
import time

import pytest
import yaml

from tests.e2e.conftest import Capstan, Kubectl, Obj
from tests.e2e.test_kubectl import PROTOBUF_SENT, header, table

SERVICE_RANGE = ipaddress.ip_network("10.96.0.0/12")


def created(kind: str, name: str) -> str:
    return f"{kind}/{name} created\n"


@pytest.mark.parametrize(("args", "kind", "name"), [
    (["create", "service", "clusterip", "web", "--tcp=80:8080"], "service", "web"),
    (["create", "secret", "generic", "creds", "--from-literal=user=admin"], "secret", "creds"),
    (["create", "configmap", "settings", "--from-literal=mode=prod"], "configmap", "settings"),
    (["create", "serviceaccount", "robot"], "serviceaccount", "robot"),
])  # fmt: skip
def test_create_sends_protobuf(kubectl: Kubectl, namespace: str, args: list[str], kind: str, name: str) -> None:
    ran = kubectl(*args, "-n", namespace, "-v=8", version="1.32")
    assert (ran.code, ran.out) == (0, created(kind, name)), ran.err
    assert PROTOBUF_SENT in ran.err
    shown = kubectl.json("get", kind, name, "-n", namespace, "-o", "json")
    assert shown["metadata"]["name"] == name


def test_create_namespace_sends_protobuf(kubectl: Kubectl, request: pytest.FixtureRequest) -> None:
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40] + f"-{int(time.time()) % 100000}"
    ran = kubectl("create", "namespace", name, "-v=8", version="1.32")
    assert (ran.code, ran.out) == (0, created("namespace", name)), ran.err
    assert PROTOBUF_SENT in ran.err


def test_service_clusterip_allocation_and_table(kubectl: Kubectl, namespace: str) -> None:
    assert kubectl("create", "service", "clusterip", "web", "--tcp=80:8080", "-n", namespace).code == 0
    assert kubectl("create", "service", "nodeport", "edge", "--tcp=443:8443", "-n", namespace).code == 0
    web = kubectl.json("get", "svc", "web", "-n", namespace, "-o", "json")
    ip = web["spec"]["clusterIP"]
    assert ipaddress.ip_address(ip) in SERVICE_RANGE
    assert web["spec"]["ports"] == [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}]
    rows = table(kubectl("get", "services", "-n", namespace).out)
    assert [(r["NAME"], r["TYPE"], r["CLUSTER-IP"], r["EXTERNAL-IP"]) for r in rows] == [
        ("edge", "NodePort", rows[0]["CLUSTER-IP"], "<none>"), ("web", "ClusterIP", ip, "<none>")]
    assert re.fullmatch(r"443:3\d{4}/TCP", rows[0]["PORT(S)"]) and rows[1]["PORT(S)"] == "80/TCP"
    wide = kubectl("get", "svc", "web", "-n", namespace, "-o", "wide").out
    assert header(wide) == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    assert table(wide)[0]["SELECTOR"] == "app=web"
    kubernetes = kubectl.json("get", "svc", "kubernetes", "-n", "default", "-o", "json")
    assert kubernetes["spec"]["clusterIP"] == "10.96.0.1"


def test_run_get_describe_delete_a_pod(kubectl: Kubectl, namespace: str) -> None:
    ran = kubectl("run", "web", "--image=nginx:1.27", "--port=80", "--labels=app=web", "-n", namespace)
    assert (ran.code, ran.out) == (0, "pod/web created\n"), ran.err
    rows = table(kubectl("get", "pods", "-n", namespace).out)
    assert [(r["NAME"], r["READY"], r["STATUS"], r["RESTARTS"]) for r in rows] == [("web", "0/1", "Pending", "0")]
    wide = kubectl("get", "pod", "web", "-n", namespace, "-o", "wide").out
    assert header(wide) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE",
                            "READINESS", "GATES"]
    shown = yaml.safe_load(kubectl("get", "pod", "web", "-n", namespace, "-o", "yaml").out)
    container = shown["spec"]["containers"][0]
    assert (container["imagePullPolicy"], container["ports"], container["terminationMessagePolicy"]) == (
        "IfNotPresent", [{"containerPort": 80, "protocol": "TCP"}], "File")
    assert (shown["spec"]["restartPolicy"], shown["spec"]["dnsPolicy"], shown["status"]["phase"]) == (
        "Always", "ClusterFirst", "Pending")
    described = kubectl("describe", "pod", "web", "-n", namespace)
    assert described.code == 0, described.err
    assert re.search(r"^Status:\s+Pending$", described.out, re.M)
    assert re.search(r"^QoS Class:\s+BestEffort$", described.out, re.M)
    assert "Events:" in described.out
    deleted = kubectl("delete", "pod", "web", "-n", namespace)
    assert (deleted.code, deleted.out) == (0, 'pod "web" deleted\n'), deleted.err
    assert kubectl("get", "pod", "web", "-n", namespace).code == 1


def test_a_bound_pod_terminates_after_its_grace_period(kubectl: Kubectl, capstan: Capstan, namespace: str) -> None:
    assert kubectl("run", "bound", "--image=nginx", "-n", namespace).code == 0
    code, _ = capstan.request("POST", f"/api/v1/namespaces/{namespace}/pods/bound/binding", {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "bound"}, "target": {"name": "node-1"}})
    assert code == 201
    wide = kubectl("get", "pod", "bound", "-n", namespace, "-o", "wide").out.splitlines()[1].split()
    assert wide[:3] + wide[5:] == ["bound", "0/1", "Pending", "<none>", "node-1", "<none>", "<none>"]
    started = time.monotonic()
    deleted = kubectl("delete", "pod", "bound", "--grace-period=2", "-n", namespace)  # waits until it is gone
    assert (deleted.code, deleted.out) == (0, 'pod "bound" deleted\n'), deleted.err
    assert 0.5 < time.monotonic() - started < 10
    assert kubectl("get", "pod", "bound", "-n", namespace).code == 1


MANIFESTS: list[tuple[str, str, Obj, list[str]]] = [
    ("endpoints", "web", {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
                          "subsets": [{"addresses": [{"ip": "10.244.0.5"}], "ports": [{"port": 80}]}]},
     ["NAME", "ENDPOINTS", "AGE"]),
    ("persistentvolumeclaims", "data", {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                        "metadata": {"name": "data"}, "spec": {
                                            "accessModes": ["ReadWriteOnce"],
                                            "resources": {"requests": {"storage": "1Gi"}}}},
     ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS", "AGE"]),
    ("resourcequotas", "quota", {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "quota"},
                                 "spec": {"hard": {"pods": "10", "limits.cpu": "4"}}},
     ["NAME", "AGE", "REQUEST", "LIMIT"]),
    ("limitranges", "limits", {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"},
                               "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}},
     ["NAME", "CREATED", "AT"]),
    ("replicationcontrollers", "web", {"apiVersion": "v1", "kind": "ReplicationController",
                                       "metadata": {"name": "web"}, "spec": {"replicas": 2, "template": {
                                           "metadata": {"labels": {"app": "web"}},
                                           "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}},
     ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]),
    ("events", "web.1", {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.1"},
                         "involvedObject": {"kind": "Pod", "name": "web"}, "reason": "Pulled",
                         "message": "Pulled the image", "type": "Normal", "source": {"component": "kubelet"}},
     ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]),
    ("serviceaccounts", "robot", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
     ["NAME", "SECRETS", "AGE"]),
]  # fmt: skip


@pytest.mark.parametrize(("resource", "name", "manifest", "columns"), MANIFESTS, ids=[m[0] for m in MANIFESTS])
def test_namespaced_kinds(kubectl: Kubectl, namespace: str, resource: str, name: str, manifest: Obj,
                          columns: list[str]) -> None:
    manifest["metadata"]["namespace"] = namespace
    if resource == "events":
        manifest["involvedObject"]["namespace"] = namespace
    ran = kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
    kind = manifest["kind"].lower()
    assert (ran.code, ran.out) == (0, created(kind, name)), ran.err
    listed = kubectl("get", resource, "-n", namespace)
    assert listed.code == 0, listed.err
    assert header(listed.out) == columns
    described = kubectl("describe", resource, name, "-n", namespace)
    assert described.code == 0 and re.search(rf"^Name:\s+{re.escape(name)}$", described.out, re.M), described
    deleted = kubectl("delete", resource, name, "-n", namespace)
    assert (deleted.code, deleted.out) == (0, f'{kind} "{name}" deleted\n'), deleted.err


def test_cluster_scoped_kinds(kubectl: Kubectl, request: pytest.FixtureRequest) -> None:
    suffix = str(int(time.time() * 1000) % 10**8)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{suffix}", "labels": {
        "node-role.kubernetes.io/worker": ""}}, "status": {
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}],
        "addresses": [{"type": "InternalIP", "address": "192.168.0.10"}],
        "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian GNU/Linux 12", "kernelVersion": "6.1.0",
                     "containerRuntimeVersion": "containerd://1.7.13"}}}
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv-{suffix}"}, "spec": {
        "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}}
    for manifest in (node, pv):
        ran = kubectl("create", "-f", "-", input=yaml.safe_dump(manifest))
        assert ran.code == 0, ran.err
    nodes = table(kubectl("get", "node", f"node-{suffix}", "-o", "wide").out)
    assert {k: nodes[0][k] for k in ("NAME", "STATUS", "ROLES", "VERSION", "INTERNAL-IP", "OS-IMAGE")} == {
        "NAME": f"node-{suffix}", "STATUS": "Ready", "ROLES": "worker", "VERSION": "v1.32.0",
        "INTERNAL-IP": "192.168.0.10", "OS-IMAGE": "Debian GNU/Linux 12"}
    described = kubectl("describe", "node", f"node-{suffix}")
    assert described.code == 0, described.err
    assert re.search(r"^Roles:\s+worker$", described.out, re.M)
    volumes = kubectl("get", "pv", f"pv-{suffix}").out
    assert header(volumes) == ["NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY", "STATUS", "CLAIM",
                               "STORAGECLASS", "REASON", "AGE"]
    assert kubectl("describe", "pv", f"pv-{suffix}").code == 0
    for kind, name in (("node", f"node-{suffix}"), ("persistentvolume", f"pv-{suffix}")):
        deleted = kubectl("delete", kind, name)
        assert (deleted.code, deleted.out) == (0, f'{kind} "{name}" deleted\n'), deleted.err


POD_MANIFEST: Obj = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "applied", "labels": {"app": "web"}},
    "spec": {
        "containers": [{
            "name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80, "name": "http"}],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
            "envFrom": [{"configMapRef": {"name": "settings"}}],
            "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}],
        }],
        "volumes": [{"name": "config", "configMap": {"name": "settings"}}],
    },
}  # fmt: skip


@pytest.mark.parametrize("server_side", [False, True], ids=["client-side", "server-side"])
def test_apply_a_pod_twice(kubectl: Kubectl, namespace: str, server_side: bool) -> None:
    flags = ["--server-side"] if server_side else []
    first = kubectl("apply", *flags, "-n", namespace, "-f", "-", input=yaml.safe_dump(POD_MANIFEST))
    assert (first.code, first.out) == (0, "pod/applied serverside-applied\n" if server_side else
                                       "pod/applied created\n"), first.err
    changed = yaml.safe_load(yaml.safe_dump(POD_MANIFEST))
    changed["spec"]["containers"][0]["image"] = "nginx:1.28"
    second = kubectl("apply", *flags, "-n", namespace, "-f", "-", input=yaml.safe_dump(changed))
    assert (second.code, second.out) == (0, "pod/applied serverside-applied\n" if server_side else
                                         "pod/applied configured\n"), second.err
    shown = kubectl.json("get", "pod", "applied", "-n", namespace, "-o", "json")
    container = shown["spec"]["containers"][0]
    assert (container["image"], container["livenessProbe"]["httpGet"]) == (
        "nginx:1.28", {"path": "/healthz", "port": "http", "scheme": "HTTP"})
    assert shown["spec"]["volumes"][0] == {"name": "config", "configMap": {"name": "settings", "defaultMode": 420}}
    bad = yaml.safe_load(yaml.safe_dump(changed))
    bad["spec"]["containers"][0]["ports"][0]["containerPort"] = 8080
    refused = kubectl("apply", *flags, "-n", namespace, "-f", "-", input=yaml.safe_dump(bad))
    assert refused.code == 1
    assert 'The Pod "applied" is invalid: spec: Forbidden: pod updates may not change fields other than' in refused.err
