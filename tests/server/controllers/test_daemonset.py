"""The daemonset controller through a real core (pkg/controller/daemon's behaviour): one Pod per eligible node
(nodeSelector, node affinity, taints), pinned by node affinity on metadata.name with kube's daemon tolerations,
rolling updates by maxUnavailable and by maxSurge, OnDelete, ControllerRevisions and status. The tests create
Node objects and play the scheduler and the kubelet: each Pod is bound to the node its affinity names, then
reported Running and Ready."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.server.client import Client, Failed, Obj, path
from tests.server.controllers.kubelet import mark
from tests.server.controllers.stateful import (
    NS,
    events_of,
    modify,
    names,
    settled,
    stateful_client_fixture,  # noqa: F401  (the stateful_client fixture)
)

SETS = path("daemonsets", NS, group="apps")
REVISIONS = path("controllerrevisions", NS, group="apps")
NODES = {"n1": ({"disk": "ssd"}, []), "n2": ({"disk": "hdd"}, []),
         "n3": ({"disk": "ssd"}, [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])}


def daemon_set(*, image: str = "agent:1", strategy: Obj | None = None, **pod_spec: Any) -> Obj:
    spec: Obj = {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"containers": [{"name": "agent", "image": image}],
                                       "terminationGracePeriodSeconds": 0, **pod_spec}}}
    if strategy is not None:
        spec["updateStrategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"}, "spec": spec}


async def make_nodes(client: Client) -> None:
    for name, (labels, taints) in NODES.items():
        await client.create(path("nodes"), {
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}})


def affinity_node(pod: Obj) -> str:
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return str(terms["nodeSelectorTerms"][0]["matchFields"][0]["values"][0])


@contextlib.asynccontextmanager
async def cluster(client: Client) -> AsyncIterator[None]:
    """The scheduler's and the kubelets' parts: every Pod bound to the node its affinity names, then Running and
    Ready."""
    async def bind_and_run(pod: Obj) -> None:
        name = pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("podIP"):
            return
        with contextlib.suppress(Failed):
            if not pod["spec"].get("nodeName"):
                await client.create(path("pods", NS, name, subresource="binding"), {
                    "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": affinity_node(pod)}})
            await mark(client, NS, name)

    async def run(started: asyncio.Event) -> None:
        meta, items = await client.list(path("pods", NS))
        for pod in items:
            await bind_and_run(pod)
        started.set()
        async for kind, pod in client.watch(path("pods", NS), resourceVersion=meta["resourceVersion"]):
            if kind in ("ADDED", "MODIFIED"):
                await bind_and_run(pod)

    started = asyncio.Event()
    task = asyncio.create_task(run(started))
    await started.wait()
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def placement(client: Client) -> dict[str, str]:
    """Each live Pod's node (by affinity) and image."""
    _, items = await client.list(path("pods", NS), labelSelector="app=agent")
    return placed(items)


def placed(items: list[Obj]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pod in items:
        if not pod["metadata"].get("deletionTimestamp"):
            node = affinity_node(pod)
            out[node] = out.get(node, "") + ("," if node in out else "") + pod["spec"]["containers"][0]["image"]
    return out


@contextlib.asynccontextmanager
async def placements(client: Client) -> AsyncIterator[list[dict[str, str]]]:
    """Every placement the Pods pass through, from a watch, so a state that lasts one event is seen."""
    seen: list[dict[str, str]] = []
    meta, items = await client.list(path("pods", NS), labelSelector="app=agent")
    live = {pod["metadata"]["name"]: pod for pod in items}
    seen.append(placed(list(live.values())))

    async def follow() -> None:
        async for kind, pod in client.watch(path("pods", NS), resourceVersion=meta["resourceVersion"],
                                            labelSelector="app=agent"):
            if kind == "DELETED":
                live.pop(pod["metadata"]["name"], None)
            elif kind in ("ADDED", "MODIFIED"):
                live[pod["metadata"]["name"]] = pod
            seen.append(placed(list(live.values())))

    task = asyncio.create_task(follow())
    try:
        yield seen
        final = await placement(client)
        for _ in range(100):  # the watch catches up with what the caller last saw
            if seen[-1] == final:
                break
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def status(client: Client) -> Obj:
    return dict((await client.get(path("daemonsets", NS, "agent", group="apps"))).get("status") or {})


async def set_image(client: Client, image: str) -> None:
    def change(current: Obj) -> None:
        current["spec"]["template"]["spec"]["containers"][0]["image"] = image
    await modify(client, path("daemonsets", NS, "agent", group="apps"), change)


@pytest.mark.parametrize(("pod_spec", "nodes"), [
    pytest.param({}, ["n1", "n2"], id="untainted-nodes"),
    pytest.param({"nodeSelector": {"disk": "ssd"}}, ["n1"], id="node-selector"),
    pytest.param({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                   "effect": "NoSchedule"}]}, ["n1", "n2", "n3"], id="toleration"),
    pytest.param({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]}]}}}},
        ["n2"], id="node-affinity"),
])
async def test_one_pod_per_eligible_node(stateful_client: Client, pod_spec: Obj, nodes: list[str]) -> None:
    client = stateful_client
    await make_nodes(client)
    await client.create(SETS, daemon_set(**pod_spec))
    await settled(lambda: placement(client), dict.fromkeys(nodes, "agent:1"))
    _, items = await client.list(path("pods", NS), labelSelector="app=agent")
    pod = items[0]
    assert pod["metadata"]["generateName"] == "agent-"
    assert pod["metadata"]["labels"]["pod-template-generation"] == "1"
    revisions = (await client.list(REVISIONS))[1]
    assert [r["metadata"]["labels"]["controller-revision-hash"] for r in revisions] == [
        pod["metadata"]["labels"]["controller-revision-hash"]]
    assert revisions[0]["metadata"]["name"] == "agent-" + pod["metadata"]["labels"]["controller-revision-hash"]
    tolerations = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"] if t.get("operator") == "Exists"}
    assert {("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule")} <= tolerations
    async with cluster(client):
        got = await settled(lambda: status(client), lambda s: s.get("numberAvailable") == len(nodes))
    assert got["desiredNumberScheduled"] == got["currentNumberScheduled"] == got["numberReady"] == len(nodes)
    assert got["updatedNumberScheduled"] == len(nodes) and got.get("numberMisscheduled", 0) == 0
    assert got["observedGeneration"] == 1
    created = [m for r, m in await events_of(client, "agent") if r == "SuccessfulCreate"]
    assert len(created) == len(nodes) and all(m.startswith("Created pod: agent-") for m in created)


async def test_a_node_that_stops_fitting_loses_its_pod(stateful_client: Client) -> None:
    client = stateful_client
    await make_nodes(client)
    await client.create(SETS, daemon_set(nodeSelector={"disk": "ssd"}))
    await settled(lambda: placement(client), {"n1": "agent:1"})
    await modify(client, path("nodes", "", "n2"), lambda node: node["metadata"]["labels"].update(disk="ssd"))
    await settled(lambda: placement(client), {"n1": "agent:1", "n2": "agent:1"})
    await modify(client, path("nodes", "", "n1"), lambda node: node["metadata"]["labels"].update(disk="hdd"))
    await settled(lambda: placement(client), {"n2": "agent:1"})


@pytest.mark.parametrize(("strategy", "both_seen"), [
    pytest.param({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}, False, id="max-unavailable"),
    pytest.param({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}, True,
                 id="max-surge"),
])
async def test_rolling_update(stateful_client: Client, strategy: Obj, both_seen: bool) -> None:
    client = stateful_client
    await make_nodes(client)
    await client.create(SETS, daemon_set(strategy=strategy))
    async with cluster(client):
        await settled(lambda: status(client), lambda s: s.get("numberAvailable") == 2)
        async with placements(client) as seen:
            await set_image(client, "agent:2")
            await settled(lambda: placement(client), {"n1": "agent:2", "n2": "agent:2"})
            got = await settled(lambda: status(client), lambda s: s.get("updatedNumberScheduled") == 2
                                and s.get("numberAvailable") == 2)
    assert got["observedGeneration"] == 2
    surged = any("," in images for state in seen for images in state.values())
    assert surged == both_seen  # with maxSurge the new Pod runs beside the old one before it goes
    assert sorted(r["revision"] for r in (await client.list(REVISIONS))[1]) == [1, 2]


async def test_on_delete_replaces_only_deleted_pods(stateful_client: Client) -> None:
    client = stateful_client
    await make_nodes(client)
    await client.create(SETS, daemon_set(strategy={"type": "OnDelete"}))
    async with cluster(client):
        await settled(lambda: status(client), lambda s: s.get("numberAvailable") == 2)
        await set_image(client, "agent:2")
        await settled(lambda: status(client), lambda s: s.get("observedGeneration") == 2)
        await asyncio.sleep(0.3)
        assert await placement(client) == {"n1": "agent:1", "n2": "agent:1"}
        _, items = await client.list(path("pods", NS), labelSelector="app=agent")
        on_n1 = next(p["metadata"]["name"] for p in items if affinity_node(p) == "n1")
        await client.delete(path("pods", NS, on_n1))
        await settled(lambda: placement(client), {"n1": "agent:2", "n2": "agent:1"})
        # the status from before the deletion also says 2 available: wait for the one that counts the new Pod
        await settled(lambda: status(client), lambda s: s.get("numberAvailable") == 2
                      and s.get("updatedNumberScheduled") == 1)
    assert len(await names(client, "controllerrevisions", group="apps")) == 2


@pytest.mark.parametrize("controlled", [True, False], ids=["controlled", "orphan"])
async def test_a_revision_someone_adds_waits_for_the_next_sync(stateful_client: Client, controlled: bool) -> None:
    """As kube's addHistory: adding a revision the DaemonSet controls wakes nothing, so an equal copy of the
    current revision stays beside it until the DaemonSet syncs for another reason (here the original's deletion,
    after which the copy is current); an orphan matching the selector wakes the DaemonSet, which adopts it (and,
    equal to the current one at a higher number, keeps it and deletes the older copy)."""
    client = stateful_client
    created = await client.create(SETS, daemon_set())
    _, items = await settled(lambda: client.list(REVISIONS), lambda got: len(got[1]) == 1)
    original = items[0]
    # the DaemonSet's own status write wakes one more sync: let it pass before the copy comes
    await settled(lambda: status(client), lambda s: s.get("observedGeneration") == 1)
    await asyncio.sleep(0.5)
    copy = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": "agent-copy", "labels": original["metadata"]["labels"]},
            "data": original["data"], "revision": original["revision"] + 1}
    if controlled:
        copy["metadata"]["ownerReferences"] = [{
            "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": created["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
    await client.create(REVISIONS, copy)
    if not controlled:
        await settled(lambda: names(client, "controllerrevisions", group="apps"), ["agent-copy"])
        adopted = await client.get(path("controllerrevisions", NS, "agent-copy", group="apps"))
        assert adopted["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
        return
    await asyncio.sleep(0.5)  # nothing is to happen: no condition to wait for
    both = sorted(["agent-copy", original["metadata"]["name"]])
    assert await names(client, "controllerrevisions", group="apps") == both
    await client.delete(path("controllerrevisions", NS, original["metadata"]["name"], group="apps"))
    assert await names(client, "controllerrevisions", group="apps") == ["agent-copy"]
