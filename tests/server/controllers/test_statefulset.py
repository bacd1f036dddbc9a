"""The statefulset controller through a real core (pkg/controller/statefulset's behaviour): ordinal Pods with their
identity, OrderedReady and Parallel management, scale-down from the highest ordinal, rolling updates with a
partition and OnDelete through ControllerRevisions, claims from volumeClaimTemplates and their retention policy,
status and events. The tests play the kubelet (tests/server/controllers/kubelet.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.server.client import Client, Obj, path
from tests.server.controllers.kubelet import Kubelet
from tests.server.controllers.stateful import (
    NS,
    events_of,
    get_or_none,
    modify,
    names,
    settled,
    stateful_client_fixture,  # noqa: F401  (the stateful_client fixture)
)

SETS = path("statefulsets", NS, group="apps")
REVISIONS = path("controllerrevisions", NS, group="apps")


def stateful_set(replicas: int = 3, *, policy: str = "OrderedReady", strategy: Obj | None = None,
                 claims: bool = False, retention: Obj | None = None, image: str = "nginx:1.25") -> Obj:
    spec: Obj = {
        "replicas": replicas, "serviceName": "web", "podManagementPolicy": policy,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "nginx", "image": image}]}}}
    if strategy is not None:
        spec["updateStrategy"] = strategy
    if claims:
        spec["volumeClaimTemplates"] = [{
            "metadata": {"name": "data", "labels": {"tier": "db"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    if retention is not None:
        spec["persistentVolumeClaimRetentionPolicy"] = retention
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"}, "spec": spec}


async def pods(client: Client) -> list[str]:
    return await names(client, "pods", labelSelector="app=web")


async def status(client: Client) -> Obj:
    return dict((await client.get(path("statefulsets", NS, "web", group="apps"))).get("status") or {})


async def set_template_image(client: Client, image: str, **spec: Any) -> None:
    def change(current: Obj) -> None:
        current["spec"]["template"]["spec"]["containers"][0]["image"] = image
        current["spec"].update(spec)
    await modify(client, path("statefulsets", NS, "web", group="apps"), change)


async def scale(client: Client, replicas: int) -> None:
    await modify(client, path("statefulsets", NS, "web", group="apps"),
                 lambda current: current["spec"].update(replicas=replicas))


async def images(client: Client) -> dict[str, str]:
    _, items = await client.list(path("pods", NS), labelSelector="app=web")
    return {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in items
            if not p["metadata"].get("deletionTimestamp")}


@pytest.mark.parametrize(("policy", "first"), [
    ("OrderedReady", ["web-0"]),  # one at a time: web-1 waits for web-0 to be Running and Ready
    ("Parallel", ["web-0", "web-1", "web-2"]),
])
async def test_pods_are_made_in_order_or_in_parallel(stateful_client: Client, policy: str, first: list[str]) -> None:
    client = stateful_client
    await client.create(SETS, stateful_set(3, policy=policy))
    await settled(lambda: pods(client), first)
    await asyncio.sleep(0.3)
    assert await pods(client) == first
    async with Kubelet(client, NS):
        await settled(lambda: pods(client), ["web-0", "web-1", "web-2"])
        got = await settled(lambda: status(client), lambda s: s.get("readyReplicas") == 3)
    assert got["replicas"] == got["availableReplicas"] == got["currentReplicas"] == got["updatedReplicas"] == 3
    assert got["currentRevision"] == got["updateRevision"] and got["currentRevision"].startswith("web-")
    assert got["observedGeneration"] == 1
    pod = await client.get(path("pods", NS, "web-1"))
    labels = pod["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "web-1"
    assert labels["apps.kubernetes.io/pod-index"] == "1"
    assert labels["controller-revision-hash"] == got["updateRevision"]
    assert pod["spec"]["hostname"] == "web-1" and pod["spec"]["subdomain"] == "web"
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"], owner["blockOwnerDeletion"]) == (
        "StatefulSet", "web", True, True)
    assert ("SuccessfulCreate", "create Pod web-0 in StatefulSet web successful") in await events_of(client, "web")


@pytest.mark.parametrize(("policy", "order"), [
    ("OrderedReady", ["web-3", "web-2", "web-1"]),  # from the highest ordinal, one at a time
    ("Parallel", None),
])
async def test_scale_down_removes_the_highest_ordinals(stateful_client: Client, policy: str,
                                                       order: list[str] | None) -> None:
    client = stateful_client
    await client.create(SETS, stateful_set(4, policy=policy))
    async with Kubelet(client, NS):
        await settled(lambda: status(client), lambda s: s.get("readyReplicas") == 4)
        deleted: list[str] = []
        meta, _ = await client.list(path("pods", NS))

        async def follow() -> None:
            async for kind, pod in client.watch(path("pods", NS), resourceVersion=meta["resourceVersion"]):
                if kind == "DELETED":
                    deleted.append(pod["metadata"]["name"])

        watcher = asyncio.create_task(follow())
        await scale(client, 1)
        await settled(lambda: pods(client), ["web-0"])
        await settled(lambda: status(client), lambda s: s.get("replicas") == 1)
        await asyncio.sleep(0.1)
        watcher.cancel()
    assert sorted(deleted) == ["web-1", "web-2", "web-3"]
    if order is not None:
        assert deleted == order
    assert ("SuccessfulDelete", "delete Pod web-3 in StatefulSet web successful") in await events_of(client, "web")


@pytest.mark.parametrize(("policy", "partition", "updated"), [
    ("OrderedReady", 0, {"web-0": "nginx:1.26", "web-1": "nginx:1.26", "web-2": "nginx:1.26"}),
    ("OrderedReady", 2, {"web-0": "nginx:1.25", "web-1": "nginx:1.25", "web-2": "nginx:1.26"}),
    ("Parallel", 0, {"web-0": "nginx:1.26", "web-1": "nginx:1.26", "web-2": "nginx:1.26"}),
])
async def test_rolling_update_with_a_partition(stateful_client: Client, policy: str, partition: int,
                                               updated: dict[str, str]) -> None:
    client = stateful_client
    await client.create(SETS, stateful_set(3, policy=policy))
    async with Kubelet(client, NS) as kubelet:
        first = await settled(lambda: status(client), lambda s: s.get("readyReplicas") == 3)
        await set_template_image(client, "nginx:1.26",
                                 updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": partition}})

        async def ready_images() -> dict[str, str]:
            kubelet.marked.clear()  # a replaced Pod has the same name: mark it again
            return await images(client)

        await settled(ready_images, updated)
        final = await settled(lambda: status(client),
                              lambda s: s.get("readyReplicas") == 3 and s.get("updatedReplicas") == 3 - partition)
    revisions = {r["metadata"]["name"]: r["revision"] for r in (await client.list(REVISIONS))[1]}
    assert revisions == {first["currentRevision"]: 1, final["updateRevision"]: 2}
    if partition:
        assert final["currentRevision"] == first["currentRevision"] and final["currentReplicas"] == partition
    else:
        assert final["currentRevision"] == final["updateRevision"] and final["currentReplicas"] == 3


async def test_on_delete_replaces_only_pods_someone_deletes(stateful_client: Client) -> None:
    client = stateful_client
    await client.create(SETS, stateful_set(2, strategy={"type": "OnDelete"}))
    async with Kubelet(client, NS) as kubelet:
        await settled(lambda: status(client), lambda s: s.get("readyReplicas") == 2)
        await set_template_image(client, "nginx:1.26")
        await settled(lambda: status(client), lambda s: s.get("observedGeneration") == 2)
        await asyncio.sleep(0.3)
        assert await images(client) == {"web-0": "nginx:1.25", "web-1": "nginx:1.25"}
        kubelet.marked.discard("web-1")
        await client.delete(path("pods", NS, "web-1"))
        await settled(lambda: images(client), {"web-0": "nginx:1.25", "web-1": "nginx:1.26"})
        # the status from before the deletion also says 2 ready: wait for the one that counts the new Pod
        got = await settled(lambda: status(client), lambda s: s.get("readyReplicas") == 2
                            and s.get("updatedReplicas") == 1)
    assert got["currentRevision"] != got["updateRevision"]


async def test_failed_pods_are_made_again(stateful_client: Client) -> None:
    client = stateful_client
    await client.create(SETS, stateful_set(1))
    async with Kubelet(client, NS) as kubelet:
        await settled(lambda: status(client), lambda s: s.get("readyReplicas") == 1)
        old = await client.get(path("pods", NS, "web-0"))
        old["status"]["phase"] = "Failed"
        kubelet.marked.discard("web-0")
        await client.update(path("pods", NS, "web-0", subresource="status"), old)

        async def uid() -> str:
            pod = await get_or_none(client, "pods", "web-0")
            return str((pod or {}).get("metadata", {}).get("uid", ""))

        await settled(uid, lambda got: got not in ("", old["metadata"]["uid"]))
        await settled(lambda: status(client), lambda s: s.get("readyReplicas") == 1)
    assert ("RecreatingFailedPod", "StatefulSet default/web is recreating failed Pod web-0") in \
        await events_of(client, "web")


@pytest.mark.parametrize(("retention", "set_owned", "kept_after_scale_down"), [
    ({"whenDeleted": "Retain", "whenScaled": "Retain"}, False, True),
    ({"whenDeleted": "Delete", "whenScaled": "Retain"}, True, True),
    ({"whenDeleted": "Retain", "whenScaled": "Delete"}, False, False),
    ({"whenDeleted": "Delete", "whenScaled": "Delete"}, True, False),
])
async def test_claims_from_templates_and_their_retention(stateful_client: Client, retention: Obj, set_owned: bool,
                                                         kept_after_scale_down: bool) -> None:
    client = stateful_client
    created = await client.create(SETS, stateful_set(2, claims=True, retention=retention))
    async with Kubelet(client, NS):
        await settled(lambda: status(client), lambda s: s.get("readyReplicas") == 2)
        claim = await client.get(path("persistentvolumeclaims", NS, "data-web-1"))
        assert claim["metadata"]["labels"] == {"tier": "db", "app": "web"}
        refs = [(r["kind"], r["uid"], r.get("controller")) for r in claim["metadata"].get("ownerReferences", [])]
        assert refs == ([("StatefulSet", created["metadata"]["uid"], None)] if set_owned else [])
        pod = await client.get(path("pods", NS, "web-1"))
        assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}} in pod["spec"]["volumes"]
        await scale(client, 1)
        await settled(lambda: pods(client), ["web-0"])
        want = ["data-web-0", "data-web-1"] if kept_after_scale_down else ["data-web-0"]
        await settled(lambda: names(client, "persistentvolumeclaims"), want)
    assert ("SuccessfulCreate", "create Claim data-web-0 Pod web-0 in StatefulSet web success") in \
        await events_of(client, "web")


@pytest.mark.parametrize(("limit", "kept"), [(1, 3), (0, 2)])
async def test_history_is_truncated_to_the_limit(stateful_client: Client, limit: int, kept: int) -> None:
    """The current and update revisions and those live Pods use are kept, and `limit` more of the others."""
    client = stateful_client
    body = stateful_set(1, strategy={"type": "OnDelete"})
    body["spec"]["revisionHistoryLimit"] = limit
    await client.create(SETS, body)
    await settled(lambda: status(client), lambda s: s.get("replicas") == 1)
    for image in ("nginx:1.26", "nginx:1.27", "nginx:1.28"):
        await set_template_image(client, image)
    await settled(lambda: status(client), lambda s: s.get("observedGeneration") == 4)
    # web-0 stays at the first revision (OnDelete): it and the update revision are live
    await settled(lambda: names(client, "controllerrevisions", group="apps"), lambda got: len(got) == kept)
    got = await status(client)
    revisions = await names(client, "controllerrevisions", group="apps")
    assert got["currentRevision"] in revisions and got["updateRevision"] in revisions
