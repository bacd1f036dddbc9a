"""The replicaset and replicationcontroller controllers (pkg/controller/replicaset) through a real core: Pods
created and deleted to match replicas, adoption and release by selector, orphaning, status (ready, available
with minReadySeconds, observedGeneration), ReplicaFailure on a quota refusal, the scale subresource, events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from server.controllers.replicaset import deletion_order
from tests.server.client import Obj, path
from tests.server.controllers.kubelet import Kubelet, mark
from tests.server.controllers.workloads import controlled, events_about, modify, pods_of, until

NS = "default"
TEMPLATE: Obj = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
KINDS = {
    "ReplicaSet": (path("replicasets", NS, group="apps"), "apps/v1", {"matchLabels": {"app": "web"}}),
    "ReplicationController": (path("replicationcontrollers", NS), "v1", {"app": "web"}),
}


def controller(kind: str, replicas: int, *, name: str = "web", min_ready: int = 0) -> Obj:
    _, api_version, selector = KINDS[kind]
    spec: Obj = {"replicas": replicas, "selector": selector, "template": TEMPLATE}
    if min_ready:
        spec["minReadySeconds"] = min_ready
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec}


def at(kind: str, name: str = "", subresource: str = "") -> Any:
    base = KINDS[kind][0]
    return path(base.resource, NS, name, group=base.group, subresource=subresource)


@pytest.mark.parametrize("kind", ["ReplicaSet", "ReplicationController"])
@pytest.mark.parametrize(("first", "then"), [(3, 1), (1, 4), (0, 2)])
async def test_scales_pods_to_replicas(tmp_path: Path, kind: str, first: int, then: int) -> None:
    async with controlled(tmp_path, "replicaset", "replicationcontroller") as client, Kubelet(client, NS):
        owner = await client.create(at(kind), controller(kind, first))
        uid = owner["metadata"]["uid"]
        await until(lambda: client.get(at(kind, "web")),
                    lambda o: o.get("status", {}).get("readyReplicas", 0) == first
                    and o["status"].get("replicas") == first)
        await modify(client, at(kind, "web", "scale"), lambda scale: scale["spec"].update(replicas=then))
        done = await until(lambda: client.get(at(kind, "web")),
                           lambda o: o["status"].get("replicas") == then
                           and o["status"].get("availableReplicas", 0) == then
                           and o["status"].get("observedGeneration") == o["metadata"]["generation"])
        assert done["status"].get("fullyLabeledReplicas", 0) == then
        pods = await until(lambda: pods_of(client, NS, uid), lambda ps: len(ps) == then)
        for pod in pods:
            assert pod["metadata"]["generateName"] == "web-"
            ref = pod["metadata"]["ownerReferences"][0]
            assert ref["kind"] == kind and ref["controller"] and ref["blockOwnerDeletion"]
        reasons = {e["reason"] for e in await until(lambda: events_about(client, NS, "web"), bool)}
        assert "SuccessfulCreate" in reasons or first == then == 0


@pytest.mark.parametrize("kind", ["ReplicaSet", "ReplicationController"])
@pytest.mark.parametrize(("pod_labels", "adopted"), [({"app": "web"}, True), ({"app": "other"}, False)])
async def test_adopts_matching_orphans(tmp_path: Path, kind: str, pod_labels: dict[str, str], adopted: bool) -> None:
    async with controlled(tmp_path, "replicaset", "replicationcontroller") as client:
        await client.create(path("pods", NS), {"metadata": {"name": "orphan", "labels": pod_labels},
                                               "spec": TEMPLATE["spec"]})
        owner = await client.create(at(kind), controller(kind, 1))
        await until(lambda: client.get(at(kind, "web")),
                    lambda o: o.get("status", {}).get("replicas") == 1)
        orphan = await client.get(path("pods", NS, "orphan"))
        refs = [r["uid"] for r in orphan["metadata"].get("ownerReferences") or []]
        assert refs == ([owner["metadata"]["uid"]] if adopted else [])
        assert len(await pods_of(client, NS, owner["metadata"]["uid"])) == 1


@pytest.mark.parametrize("kind", ["ReplicaSet", "ReplicationController"])
async def test_releases_a_pod_whose_labels_change(tmp_path: Path, kind: str) -> None:
    async with controlled(tmp_path, "replicaset", "replicationcontroller") as client:
        owner = await client.create(at(kind), controller(kind, 1))
        uid = owner["metadata"]["uid"]
        [pod] = await until(lambda: pods_of(client, NS, uid), lambda ps: len(ps) == 1)
        await modify(client, path("pods", NS, pod["metadata"]["name"]),
                     lambda p: p["metadata"].update(labels={"app": "moved"}))
        released = await until(lambda: client.get(path("pods", NS, pod["metadata"]["name"])),
                               lambda p: not p["metadata"].get("ownerReferences"))
        assert released["metadata"]["labels"] == {"app": "moved"}
        await until(lambda: pods_of(client, NS, uid), lambda ps: len(ps) == 1)  # a replacement


async def test_orphan_deletion_leaves_the_pods(tmp_path: Path) -> None:
    async with controlled(tmp_path, "replicaset") as client:
        owner = await client.create(at("ReplicaSet"), controller("ReplicaSet", 2))
        uid = owner["metadata"]["uid"]
        pods = await until(lambda: pods_of(client, NS, uid), lambda ps: len(ps) == 2)
        await client.delete(at("ReplicaSet", "web"), propagationPolicy="Orphan")
        names = sorted(p["metadata"]["name"] for p in pods)

        async def survivors() -> list[Obj]:
            _, items = await client.list(path("pods", NS))
            return sorted((p for p in items if p["metadata"]["name"] in names), key=lambda p: p["metadata"]["name"])
        left = await until(survivors, lambda ps: len(ps) == 2 and all(not p["metadata"].get("ownerReferences")
                                                                      for p in ps))
        assert [p["metadata"]["name"] for p in left] == names


async def test_min_ready_seconds(tmp_path: Path) -> None:
    async with controlled(tmp_path, "replicaset") as client, Kubelet(client, NS):
        await client.create(at("ReplicaSet"), controller("ReplicaSet", 2, min_ready=2))
        ready = await until(lambda: client.get(at("ReplicaSet", "web")),
                            lambda o: o.get("status", {}).get("readyReplicas", 0) == 2)
        assert ready["status"].get("availableReplicas", 0) < 2
        await until(lambda: client.get(at("ReplicaSet", "web")),
                    lambda o: o["status"].get("availableReplicas", 0) == 2, timeout=8)


@pytest.mark.parametrize("kind", ["ReplicaSet", "ReplicationController"])
async def test_quota_refusal_is_a_replica_failure(tmp_path: Path, kind: str) -> None:
    async with controlled(tmp_path, "replicaset", "replicationcontroller") as client:
        await client.create(path("resourcequotas", NS), {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "1"}}})
        await until(lambda: client.get(path("resourcequotas", NS, "pods")),
                    lambda q: q.get("status", {}).get("hard"))
        await client.create(at(kind), controller(kind, 2))
        failing = await until(lambda: client.get(at(kind, "web")),
                              lambda o: any(c["type"] == "ReplicaFailure" for c in o.get("status", {}).get(
                                  "conditions") or []))
        [failure] = failing["status"]["conditions"]
        assert failure["reason"] == "FailedCreate" and failure["status"] == "True"
        assert "exceeded quota" in failure["message"]
        warnings = await until(lambda: events_about(client, NS, "web"),
                               lambda es: any(e["reason"] == "FailedCreate" for e in es))
        assert any(e["type"] == "Warning" and e["message"].startswith("Error creating: ") for e in warnings)
        await modify(client, path("resourcequotas", NS, "pods"), lambda quota: quota["spec"]["hard"].update(pods="5"))
        await until(lambda: client.get(at(kind, "web")),
                    lambda o: o["status"].get("replicas") == 2 and not o["status"].get("conditions"), timeout=15)


async def test_scale_down_deletes_not_ready_pods_first(tmp_path: Path) -> None:
    async with controlled(tmp_path, "replicaset") as client:
        owner = await client.create(at("ReplicaSet"), controller("ReplicaSet", 3))
        uid = owner["metadata"]["uid"]
        pods = await until(lambda: pods_of(client, NS, uid), lambda ps: len(ps) == 3)
        names = sorted(p["metadata"]["name"] for p in pods)
        await mark(client, NS, names[0], ready=True)
        await mark(client, NS, names[1], ready=False)
        await until(lambda: client.get(at("ReplicaSet", "web")), lambda o: o["status"].get("readyReplicas") == 1)
        await modify(client, at("ReplicaSet", "web"), lambda rs: rs["spec"].update(replicas=1))
        left = await until(lambda: pods_of(client, NS, uid), lambda ps: len(ps) == 1)
        assert left[0]["metadata"]["name"] == names[0]


def _pod(name: str, *, node: str = "", phase: str = "Running", ready: bool = True, cost: int = 0,
         created: str = "2024-01-01T00:00:00Z") -> Obj:
    return {"metadata": {"name": name, "uid": name, "creationTimestamp": created,
                         "annotations": {"controller.kubernetes.io/pod-deletion-cost": str(cost)}},
            "spec": {"nodeName": node},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                                        "lastTransitionTime": created}]}}


@pytest.mark.parametrize(("pods", "first"), [
    ([_pod("assigned", node="n"), _pod("unassigned")], "unassigned"),
    ([_pod("running", node="n"), _pod("pending", node="n", phase="Pending")], "pending"),
    ([_pod("ready", node="n"), _pod("notready", node="n", ready=False)], "notready"),
    ([_pod("dear", node="n", cost=10), _pod("cheap", node="n", cost=-5)], "cheap"),
    ([_pod("old", node="n", created="2020-01-01T00:00:00Z"), _pod("new", node="n")], "new"),
])
def test_deletion_order(pods: list[Obj], first: str) -> None:
    assert deletion_order(pods, [0] * len(pods), 1_800_000_000.0)[0]["metadata"]["name"] == first
