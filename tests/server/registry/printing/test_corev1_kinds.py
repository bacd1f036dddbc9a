"""Table columns of the core/v1 kinds (server/registry/printing/corev1_kinds.py) against kube-apiserver's printers.go:
headers (name, type, format, priority), and the cells for objects in the states users see.

Cells are compared whole, wide columns included (kube-apiserver always generates them; kubectl hides
priority-1 columns without -o wide).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from server.kinds.corev1 import (
    EVENTS,
    LIMIT_RANGES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    REPLICATION_CONTROLLERS,
    RESOURCE_QUOTAS,
    SERVICE_ACCOUNTS,
    SERVICES,
)
from server.kinds.pods import PODS
from server.kinds.podtemplates import POD_TEMPLATES
from server.kinds.services import ENDPOINTS
from server.machinery.codec import gotime
from server.machinery.values import Obj
from server.registry.printing import columns_for, object_table
from server.registry.resources import Resource

NOW = gotime.parse("2024-05-01T10:00:00Z", gotime.RFC3339)[0] * 10**9
AN_HOUR_AGO = "2024-05-01T09:00:00Z"
# The Restarts cell words the last restart against the clock itself (its "(5m ago)" is not a lone Since):
# this placeholder becomes the time five minutes before the test runs.
FIVE_MINUTES_AGO = "<five minutes ago>"


def cells(resource: Resource, obj: Obj) -> list[Any]:
    full = {"metadata": {"creationTimestamp": AN_HOUR_AGO, **obj.get("metadata", {})},
            **{k: v for k, v in obj.items() if k != "metadata"}}
    table = object_table(resource, full, "1", now_ns=NOW)
    row: list[Any] = table["rows"][0]["cells"]
    return row


HEADERS = [
    (PODS, [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0), ("IP", 1), ("Node", 1),
            ("Nominated Node", 1), ("Readiness Gates", 1)]),
    (SERVICES, [("Name", 0), ("Type", 0), ("Cluster-IP", 0), ("External-IP", 0), ("Port(s)", 0), ("Age", 0),
                ("Selector", 1)]),
    (ENDPOINTS, [("Name", 0), ("Endpoints", 0), ("Age", 0)]),
    (NODES, [("Name", 0), ("Status", 0), ("Roles", 0), ("Age", 0), ("Version", 0), ("Internal-IP", 1),
             ("External-IP", 1), ("OS-Image", 1), ("Kernel-Version", 1), ("Container-Runtime", 1)]),
    (EVENTS, [("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Subobject", 1), ("Source", 1),
              ("Message", 0), ("First Seen", 1), ("Count", 1), ("Name", 1)]),
    (PERSISTENT_VOLUMES, [("Name", 0), ("Capacity", 0), ("Access Modes", 0), ("Reclaim Policy", 0), ("Status", 0),
                          ("Claim", 0), ("StorageClass", 0), ("Reason", 0), ("Age", 0),
                          ("VolumeMode", 1)]),
    (PERSISTENT_VOLUME_CLAIMS, [("Name", 0), ("Status", 0), ("Volume", 0), ("Capacity", 0), ("Access Modes", 0),
                                ("StorageClass", 0), ("Age", 0), ("VolumeMode", 1)]),
    (RESOURCE_QUOTAS, [("Name", 0), ("Age", 0), ("Request", 0), ("Limit", 0)]),
    (LIMIT_RANGES, [("Name", 0), ("Created At", 0)]),
    (SERVICE_ACCOUNTS, [("Name", 0), ("Secrets", 0), ("Age", 0)]),
    (REPLICATION_CONTROLLERS, [("Name", 0), ("Desired", 0), ("Current", 0), ("Ready", 0), ("Age", 0),
                               ("Containers", 1), ("Images", 1), ("Selector", 1)]),
    (POD_TEMPLATES, [("Name", 0), ("Containers", 0), ("Images", 0), ("Pod Labels", 0)]),
]  # fmt: skip


@pytest.mark.parametrize(("resource", "expected"), HEADERS, ids=[r.resource for r, _ in HEADERS])
def test_headers(resource: Resource, expected: list[tuple[str, int]]) -> None:
    columns = columns_for(resource)
    assert [(c.name, c.priority) for c in columns] == expected
    assert all(c.description for c in columns)
    names = [c.name for c in columns if c.format == "name"]
    assert names == ["Name"]


def test_column_types_and_descriptions_as_kube_sends_them() -> None:
    rc = {c.name: c.type for c in columns_for(REPLICATION_CONTROLLERS)}
    assert (rc["Desired"], rc["Current"], rc["Ready"], rc["Containers"]) == ("integer", "integer", "integer", "string")
    assert [c.type for c in columns_for(LIMIT_RANGES)] == ["string", "date"]
    pod = {c.name: c.description for c in columns_for(PODS)}
    assert pod["Ready"] == "The aggregate readiness state of this pod for accepting traffic."
    assert pod["IP"] == ("podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet "
                         "allocated.")
    assert {c.name: c.description for c in columns_for(NODES)}["Status"] == "The status of the node"


def running(name: str, ready: bool = True, restarts: int = 0, **extra: Any) -> Obj:
    return {"name": name, "ready": ready, "restartCount": restarts, "state": {"running": {"startedAt": AN_HOUR_AGO}},
            **extra}


POD_SPEC = {"containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]}
PODS_CASES: list[tuple[str, Obj, list[Any]]] = [
    ("pending, unscheduled", {"spec": POD_SPEC, "status": {"phase": "Pending"}},
     ["0/2", "Pending", "0", "60m", "<none>", "<none>", "<none>", "<none>"]),
    ("running", {"spec": {**POD_SPEC, "nodeName": "node-1"}, "status": {
        "phase": "Running", "podIPs": [{"ip": "10.244.0.5"}], "containerStatuses": [running("a"), running("b")]}},
     ["2/2", "Running", "0", "60m", "10.244.0.5", "node-1", "<none>", "<none>"]),
    ("image pull backoff", {"spec": POD_SPEC, "status": {"phase": "Pending", "containerStatuses": [
        running("a"), {"name": "b", "state": {"waiting": {"reason": "ImagePullBackOff"}}, "restartCount": 0}]}},
     ["1/2", "ImagePullBackOff", "0", "60m", "<none>", "<none>", "<none>", "<none>"]),
    ("restarted", {"spec": POD_SPEC, "status": {"phase": "Running", "containerStatuses": [
        running("a", restarts=3, lastState={"terminated": {"exitCode": 1, "finishedAt": FIVE_MINUTES_AGO}}),
        running("b")]}},
     ["2/2", "Running", "3 (5m ago)", "60m", "<none>", "<none>", "<none>", "<none>"]),
    ("crashed without reason", {"spec": POD_SPEC, "status": {"phase": "Running", "containerStatuses": [
        running("a"), {"name": "b", "state": {"terminated": {"exitCode": 137}}}]}},
     ["1/2", "ExitCode:137", "0", "60m", "<none>", "<none>", "<none>", "<none>"]),
    ("init containers", {"spec": {**POD_SPEC, "initContainers": [{"name": "i1"}, {"name": "i2"}]}, "status": {
        "phase": "Pending", "initContainerStatuses": [
            {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
            {"name": "i2", "state": {"running": {}}}]}},
     ["0/2", "Init:1/2", "0", "60m", "<none>", "<none>", "<none>", "<none>"]),
    ("terminating", {"metadata": {"deletionTimestamp": "2024-05-01T10:00:30Z"}, "spec": POD_SPEC,
                     "status": {"phase": "Running"}},
     ["0/2", "Terminating", "0", "60m", "<none>", "<none>", "<none>", "<none>"]),
    ("succeeded", {"spec": POD_SPEC, "status": {"phase": "Succeeded", "containerStatuses": [
        {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "b", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}},
     ["0/2", "Completed", "0", "60m", "<none>", "<none>", "<none>", "<none>"]),
    ("readiness gates", {"spec": {**POD_SPEC, "readinessGates": [{"conditionType": "x"}, {"conditionType": "y"}]},
                         "status": {"phase": "Running", "conditions": [{"type": "x", "status": "True"}]}},
     ["0/2", "Running", "0", "60m", "<none>", "<none>", "<none>", "1/2"]),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "expected"), [c[1:] for c in PODS_CASES], ids=[c[0] for c in PODS_CASES])
def test_pod_cells(obj: Obj, expected: list[Any]) -> None:
    obj = json.loads(json.dumps(obj).replace(FIVE_MINUTES_AGO, gotime.format_seconds(int(time.time()) - 300)))
    assert cells(PODS, {"metadata": {"name": "p", **obj.get("metadata", {})}, **obj})[1:] == expected


SERVICE_CASES: list[tuple[str, Obj, list[Any]]] = [
    ("cluster ip", {"spec": {"type": "ClusterIP", "clusterIPs": ["10.96.0.10"], "selector": {"b": "2", "a": "1"},
                             "ports": [{"port": 80, "protocol": "TCP"}]}},
     ["ClusterIP", "10.96.0.10", "<none>", "80/TCP", "60m", "a=1,b=2"]),
    ("node port", {"spec": {"type": "NodePort", "clusterIPs": ["10.96.0.11"], "ports": [
        {"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "nodePort": 30053, "protocol": "UDP"}]}},
     ["NodePort", "10.96.0.11", "<none>", "80:30080/TCP,53:30053/UDP", "60m", "<none>"]),
    ("load balancer pending", {"spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.12"], "ports": []}},
     ["LoadBalancer", "10.96.0.12", "<pending>", "<none>", "60m", "<none>"]),
    ("load balancer", {"spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.12"], "externalIPs": ["1.2.3.4"]},
                       "status": {"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}]}}},
     ["LoadBalancer", "10.96.0.12", "5.6.7.8,1.2.3.4", "<none>", "60m", "<none>"]),
    ("external name", {"spec": {"type": "ExternalName", "externalName": "db.example.com"}},
     ["ExternalName", "<none>", "db.example.com", "<none>", "60m", "<none>"]),
    ("headless", {"spec": {"type": "ClusterIP", "clusterIPs": ["None"]}},
     ["ClusterIP", "None", "<none>", "<none>", "60m", "<none>"]),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "expected"), [c[1:] for c in SERVICE_CASES], ids=[c[0] for c in SERVICE_CASES])
def test_service_cells(obj: Obj, expected: list[Any]) -> None:
    assert cells(SERVICES, {"metadata": {"name": "s"}, **obj})[1:] == expected


def test_endpoints_cells() -> None:
    four = {"subsets": [{"addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 5)], "ports": [{"port": 80}]}]}
    assert cells(ENDPOINTS, {"metadata": {"name": "e"}, **four})[1] == "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more..."
    assert cells(ENDPOINTS, {"metadata": {"name": "e"}})[1] == "<none>"
    no_ports = {"subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]}
    assert cells(ENDPOINTS, {"metadata": {"name": "e"}, **no_ports})[1] == "10.0.0.1"


def test_node_cells() -> None:
    node = {"metadata": {"name": "n", "labels": {"node-role.kubernetes.io/control-plane": "",
                                                 "kubernetes.io/role": "worker"}},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "192.168.0.10"}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian"}}}
    assert cells(NODES, node) == ["n", "Ready,SchedulingDisabled", "control-plane,worker", "60m", "v1.32.0",
                                  "192.168.0.10", "<none>", "Debian", "<unknown>", "<unknown>"]
    assert cells(NODES, {"metadata": {"name": "m"}})[1:3] == ["Unknown", "<none>"]


def test_event_cells() -> None:
    event = {"metadata": {"name": "web.1"}, "involvedObject": {"kind": "Pod", "name": "web",
                                                                "fieldPath": "spec.containers{app}"},
             "reason": "Pulled", "message": " pulled \n", "type": "Normal", "source": {"component": "kubelet",
                                                                                     "host": "node-1"},
             "firstTimestamp": "2024-05-01T09:50:00Z", "lastTimestamp": "2024-05-01T09:58:00Z", "count": 3}
    assert cells(EVENTS, event) == ["2m", "Normal", "Pulled", "pod/web", "spec.containers{app}", "kubelet, node-1",
                                    "pulled", "10m", 3, "web.1"]
    new_style = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"}, "eventTime": "2024-05-01T09:59:00.5Z",
                 "reportingComponent": "controller", "series": {"count": 7, "lastObservedTime": "2024-05-01T09:59:30Z"}}
    assert cells(EVENTS, new_style) == ["30s", "", "", "node", "", "controller", "", "59s", 7, "e"]


def test_storage_cells() -> None:
    pv = {"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "10Gi"}, "accessModes": [
        "ReadWriteMany", "ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "fast",
        "claimRef": {"namespace": "ns", "name": "data"}, "volumeMode": "Filesystem"}, "status": {"phase": "Bound"}}
    assert cells(PERSISTENT_VOLUMES, pv) == ["pv", "10Gi", "RWO,RWX", "Retain", "Bound", "ns/data", "fast", "", "60m",
                                             "Filesystem"]
    pending = {"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}},
               "status": {"phase": "Pending"}}
    assert cells(PERSISTENT_VOLUME_CLAIMS, pending) == ["data", "Pending", "", "", "", "", "60m", "<unset>"]
    bound = {"metadata": {"name": "data", "annotations": {"volume.beta.kubernetes.io/storage-class": "old"},
                          "deletionTimestamp": AN_HOUR_AGO},
             "spec": {"volumeName": "pv", "volumeMode": "Block"},
             "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"]}}
    assert cells(PERSISTENT_VOLUME_CLAIMS, bound) == ["data", "Terminating", "pv", "10Gi", "RWO", "old", "60m",
                                                      "Block"]


def test_quota_limit_range_service_account_and_rc_cells() -> None:
    quota = {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "10", "limits.cpu": "4", "requests.memory": "1Gi"}},
             "status": {"hard": {"pods": "10", "limits.cpu": "4", "requests.memory": "1Gi"}, "used": {"pods": "2"}}}
    assert cells(RESOURCE_QUOTAS, quota) == ["q", "60m", "pods: 2/10, requests.memory: 0/1Gi", "limits.cpu: 0/4"]
    assert cells(LIMIT_RANGES, {"metadata": {"name": "l"}}) == ["l", AN_HOUR_AGO]
    assert cells(SERVICE_ACCOUNTS, {"metadata": {"name": "sa"}, "secrets": [{"name": "t"}]}) == ["sa", 1, "60m"]
    rc = {"metadata": {"name": "r"}, "spec": {"replicas": 3, "selector": {"app": "web"}, "template": {
        "spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "busybox"}]}}},
        "status": {"replicas": 2, "readyReplicas": 1}}
    assert cells(REPLICATION_CONTROLLERS, rc) == ["r", 3, 2, 1, "60m", "a,b", "nginx,busybox", "app=web"]


@pytest.mark.parametrize(("obj", "expected"), [
    ({"metadata": {"name": "t", "labels": {"own": "label"}}, "template": {
        "metadata": {"labels": {"tier": "web", "app": "shop"}},
        "spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "busybox"}]}}},
     ["t", "a,b", "nginx,busybox", "app=shop,tier=web"]),
    ({"metadata": {"name": "bare"}}, ["bare", "", "", "<none>"]),
], ids=["containers and template labels", "no template"])  # fmt: skip
def test_pod_template_cells(obj: Obj, expected: list[Any]) -> None:
    """printPodTemplate: the template's containers and labels (not the PodTemplate's own), and no Age."""
    assert cells(POD_TEMPLATES, obj) == expected
    assert {c.name: c.description for c in columns_for(POD_TEMPLATES)}["Pod Labels"] == (
        "The labels for the pod template.")
