"""The deployment controller (pkg/controller/deployment) through a real core, the test playing the kubelet:
ReplicaSets per template named `<name>-<hash>`, rolling updates and Recreate, scaling, pause and resume,
revision annotations and history cleanup, conditions and events, adoption."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from server.controllers.deployment import fenceposts
from server.controllers.workload.hashing import compute_hash
from tests.server.client import Client, Obj, path
from tests.server.controllers.kubelet import NOT_READY_LABEL, Kubelet
from tests.server.controllers.workloads import controlled, events_about, modify, until

NS = "default"
DEPLOYMENTS = path("deployments", NS, group="apps")
REPLICASETS = path("replicasets", NS, group="apps")


def deployment(replicas: int = 3, *, image: str = "nginx:1", strategy: Obj | None = None, **spec: Any) -> Obj:
    body: Obj = {
        "replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "app", "image": image}]}}, **spec}
    if strategy:
        body["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": body}


def named(name: str) -> Any:
    return path("deployments", NS, name, group="apps")


async def get(client: Client) -> Obj:
    return await client.get(named("web"))


def condition(d: Obj, kind: str) -> Obj:
    return next((c for c in d.get("status", {}).get("conditions") or [] if c["type"] == kind), {})


def complete(d: Obj) -> bool:
    s, want = d.get("status", {}), d["spec"]["replicas"]
    return (s.get("observedGeneration") == d["metadata"]["generation"] and s.get("updatedReplicas", 0) == want
            and s.get("replicas", 0) == want and s.get("availableReplicas", 0) == want
            and condition(d, "Progressing").get("reason") == "NewReplicaSetAvailable")


async def replicasets(client: Client) -> list[Obj]:
    _, items = await client.list(REPLICASETS)
    return sorted(items, key=lambda rs: int(rs["metadata"].get("annotations", {}).get(
        "deployment.kubernetes.io/revision", "0")))


async def set_image(client: Client, image: str, **spec: Any) -> None:
    def change(d: Obj) -> None:
        d["spec"]["template"]["spec"]["containers"][0]["image"] = image
        d["spec"].update(spec)
    await modify(client, named("web"), change)


async def set_spec(client: Client, **spec: Any) -> None:
    await modify(client, named("web"), lambda d: d["spec"].update(spec))


@pytest.mark.parametrize(("surge", "unavailable", "replicas", "want"), [
    ("25%", "25%", 10, (3, 2)), ("25%", "25%", 1, (1, 0)), (0, 0, 3, (0, 1)), ("50%", 1, 3, (2, 1)),
    ("0%", "10%", 3, (0, 1)),
])
def test_fenceposts_round_as_kube(surge: Any, unavailable: Any, replicas: int, want: tuple[int, int]) -> None:
    d = deployment(replicas, strategy={"type": "RollingUpdate",
                                       "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}})
    assert fenceposts(d) == want


async def test_reaches_available(tmp_path: Path) -> None:
    async with controlled(tmp_path, "deployment", "replicaset") as client, Kubelet(client, NS):
        await client.create(DEPLOYMENTS, deployment(3))
        done = await until(lambda: get(client), complete)
        assert condition(done, "Available")["reason"] == "MinimumReplicasAvailable"
        assert done["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
        [rs] = await replicasets(client)
        pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
        assert rs["metadata"]["name"] == f"web-{pod_hash}"
        assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
        assert rs["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1",
                                                 "deployment.kubernetes.io/desired-replicas": "3",
                                                 "deployment.kubernetes.io/max-replicas": "4"}
        assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
        events = await until(lambda: events_about(client, NS, "web"),
                             lambda es: any(e["reason"] == "ScalingReplicaSet" for e in es))
        assert any(e["message"] == f"Scaled up replica set web-{pod_hash} to 3" for e in events)


@pytest.mark.parametrize("strategy", [None, {"type": "Recreate"},
                                      {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0,
                                                                                  "maxUnavailable": 1}}])
async def test_a_new_template_rolls_out(tmp_path: Path, strategy: Obj | None) -> None:
    async with controlled(tmp_path, "deployment", "replicaset") as client, Kubelet(client, NS):
        await client.create(DEPLOYMENTS, deployment(3, strategy=strategy))
        await until(lambda: get(client), complete)
        await set_image(client, "nginx:2")
        done = await until(lambda: get(client), lambda d: complete(d) and d["metadata"]["annotations"][
            "deployment.kubernetes.io/revision"] == "2", timeout=20)
        old, new = await replicasets(client)
        assert old["spec"]["replicas"] == 0 and new["spec"]["replicas"] == 3
        assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
        assert done["status"]["updatedReplicas"] == 3


async def test_recreate_scales_the_old_down_before_the_new_up(tmp_path: Path) -> None:
    async with controlled(tmp_path, "deployment", "replicaset") as client, Kubelet(client, NS):
        await client.create(DEPLOYMENTS, deployment(2, strategy={"type": "Recreate"}))
        await until(lambda: get(client), complete)
        await set_image(client, "nginx:2")
        await until(lambda: get(client), lambda d: complete(d) and d["status"].get("observedGeneration") == 2)
        events = [e["message"] for e in sorted(await events_about(client, NS, "web"),
                                               key=lambda e: e["metadata"]["creationTimestamp"])]
        down = next(i for i, m in enumerate(events) if m.startswith("Scaled down"))
        second_up = [i for i, m in enumerate(events) if m.startswith("Scaled up")][-1]
        assert down < second_up


@pytest.mark.parametrize(("first", "then"), [(3, 5), (4, 1), (2, 0)])
async def test_scaling(tmp_path: Path, first: int, then: int) -> None:
    async with controlled(tmp_path, "deployment", "replicaset") as client, Kubelet(client, NS):
        await client.create(DEPLOYMENTS, deployment(first))
        await until(lambda: get(client), complete)
        await modify(client, path("deployments", NS, "web", group="apps", subresource="scale"),
                     lambda scale: scale["spec"].update(replicas=then))
        await until(lambda: get(client), lambda d: d["status"].get("observedGeneration") == 2
                    and d["status"].get("replicas", 0) == then and d["status"].get("availableReplicas", 0) == then)
        [rs] = await replicasets(client)
        assert rs["spec"]["replicas"] == then
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == str(then)


async def test_pause_holds_the_rollout(tmp_path: Path) -> None:
    async with controlled(tmp_path, "deployment", "replicaset") as client, Kubelet(client, NS):
        await client.create(DEPLOYMENTS, deployment(2))
        await until(lambda: get(client), complete)
        await set_image(client, "nginx:2", paused=True)
        paused = await until(lambda: get(client),
                             lambda d: condition(d, "Progressing").get("reason") == "DeploymentPaused")
        assert condition(paused, "Progressing")["status"] == "Unknown"
        assert len(await replicasets(client)) == 1
        await set_spec(client, paused=False)
        await until(lambda: get(client), lambda d: complete(d) and len(d["metadata"]["annotations"]) > 0
                    and d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2", timeout=20)


async def test_revision_history_limit(tmp_path: Path) -> None:
    async with controlled(tmp_path, "deployment", "replicaset") as client, Kubelet(client, NS):
        await client.create(DEPLOYMENTS, deployment(1, revisionHistoryLimit=1))
        for n in (2, 3, 4):
            await until(lambda: get(client), complete, timeout=15)
            await set_image(client, f"nginx:{n}")
        await until(lambda: get(client), lambda d: complete(d) and d["metadata"]["annotations"][
            "deployment.kubernetes.io/revision"] == "4", timeout=15)
        revisions = await until(lambda: replicasets(client), lambda rss: len(rss) == 2)
        assert [rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] for rs in revisions] == ["3", "4"]


async def test_rollback_to_an_old_template_reuses_its_replicaset(tmp_path: Path) -> None:
    async with controlled(tmp_path, "deployment", "replicaset") as client, Kubelet(client, NS):
        await client.create(DEPLOYMENTS, deployment(2))
        await until(lambda: get(client), complete)
        await set_image(client, "nginx:2")
        await until(lambda: get(client), lambda d: complete(d) and d["status"]["observedGeneration"] == 2)
        await set_image(client, "nginx:1")  # what kubectl rollout undo does
        await until(lambda: get(client), lambda d: complete(d) and d["metadata"]["annotations"][
            "deployment.kubernetes.io/revision"] == "3", timeout=20)
        rss = await replicasets(client)
        assert len(rss) == 2
        back = rss[-1]
        assert back["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
        assert back["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"


async def test_progress_deadline_exceeded(tmp_path: Path) -> None:
    async with controlled(tmp_path, "deployment", "replicaset") as client, Kubelet(client, NS):
        never = deployment(1, progressDeadlineSeconds=1)
        never["spec"]["template"]["metadata"]["labels"][NOT_READY_LABEL] = "false"
        await client.create(DEPLOYMENTS, never)
        stuck = await until(lambda: get(client),
                            lambda d: condition(d, "Progressing").get("reason") == "ProgressDeadlineExceeded",
                            timeout=10)
        assert condition(stuck, "Progressing")["status"] == "False"
        assert condition(stuck, "Available") == {**condition(stuck, "Available"), "status": "False",
                                                 "reason": "MinimumReplicasUnavailable"}


async def test_quota_failure_reaches_the_deployment(tmp_path: Path) -> None:
    async with controlled(tmp_path, "deployment", "replicaset") as client:
        await client.create(path("resourcequotas", NS), {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "1"}}})
        await until(lambda: client.get(path("resourcequotas", NS, "pods")), lambda q: q.get("status", {}).get("hard"))
        await client.create(DEPLOYMENTS, deployment(3))
        failing = await until(lambda: get(client), lambda d: bool(condition(d, "ReplicaFailure")))
        assert condition(failing, "ReplicaFailure")["reason"] == "FailedCreate"


async def test_adopts_a_matching_replicaset(tmp_path: Path) -> None:
    async with controlled(tmp_path, "deployment", "replicaset") as client, Kubelet(client, NS):
        d = deployment(2)
        template = copy.deepcopy(d["spec"]["template"])
        await client.create(REPLICASETS, {"metadata": {"name": "orphan", "labels": {"app": "web"}}, "spec": {
            "replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template}})
        await client.create(DEPLOYMENTS, d)
        await until(lambda: get(client), complete)
        [rs] = await replicasets(client)
        assert rs["metadata"]["name"] == "orphan"
        assert rs["metadata"]["ownerReferences"][0]["name"] == "web"



async def test_a_hash_collision_bumps_collision_count(tmp_path: Path) -> None:
    async with controlled(tmp_path, "deployment", "replicaset") as client, Kubelet(client, NS):
        created = await client.create(DEPLOYMENTS, deployment(1, paused=True))  # paused: no ReplicaSet yet
        taken = f"web-{compute_hash(created['spec']['template'])}"
        await client.create(REPLICASETS, {"metadata": {"name": taken, "labels": {"app": "other"}}, "spec": {
            "replicas": 0, "selector": {"matchLabels": {"app": "other"}},
            "template": {"metadata": {"labels": {"app": "other"}}, "spec": created["spec"]["template"]["spec"]}}})
        await set_spec(client, paused=False)
        done = await until(lambda: get(client), complete)
        assert done["status"]["collisionCount"] == 1
        ours = [rs for rs in await replicasets(client) if rs["metadata"].get("ownerReferences")]
        assert [rs["metadata"]["name"] for rs in ours] == [
            f"web-{compute_hash(created['spec']['template'], 1)}"]


@pytest.mark.parametrize("policy", ["Background", "Foreground"])
async def test_deletion_cascades(tmp_path: Path, policy: str) -> None:
    async with controlled(tmp_path, "deployment", "replicaset") as client, Kubelet(client, NS):
        await client.create(DEPLOYMENTS, deployment(2))
        await until(lambda: get(client), complete)
        await client.delete(named("web"), propagationPolicy=policy)

        async def left() -> tuple[int, int, int]:
            _, ds = await client.list(DEPLOYMENTS)
            _, pods = await client.list(path("pods", NS))
            return len(ds), len(await replicasets(client)), len(pods)
        await until(left, lambda counts: counts == (0, 0, 0), timeout=15)


async def test_proportional_scaling_during_a_rollout(tmp_path: Path) -> None:
    """kube's e2e "deployment should support proportional scaling": replicas 10, maxSurge 3, maxUnavailable 2, a
    rollout whose Pods never become ready, then scaled to 30 in the middle of it."""
    async with controlled(tmp_path, "deployment", "replicaset") as client, Kubelet(client, NS):
        await client.create(DEPLOYMENTS, deployment(10, strategy={
            "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}))
        await until(lambda: get(client), complete, timeout=20)
        await modify(client, named("web"),
                     lambda d: d["spec"]["template"]["metadata"]["labels"].update({NOT_READY_LABEL: "false"}))

        async def sizes() -> list[int]:
            return [rs["spec"]["replicas"] for rs in await replicasets(client)]
        await until(sizes, lambda got: got == [8, 5], timeout=15)
        await set_spec(client, replicas=30)
        await until(sizes, lambda got: got == [20, 13], timeout=15)
