"""The disruption controller (server/controllers/disruption.py) against a real core: PodDisruptionBudget status
from the selected Pods, their readiness and their controllers' scale, as kube 1.28's controller writes it; and the
eviction subresource charging that status."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from server.controllers.disruption import DisruptionController
from server.runtime.informer import SharedInformers
from tests.server.client import Client, Failed, Obj, path, raw
from tests.server.controllers.kubelet import mark

NS = "default"
PDBS = path("poddisruptionbudgets", NS, group="policy")
PODS = path("pods", NS)
LABELS = {"app": "web"}
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}


@pytest.fixture
async def disruption(client: Client) -> AsyncIterator[DisruptionController]:
    controller = DisruptionController(client.running.core, SharedInformers(client.running.core))
    await controller.start()
    try:
        yield controller
    finally:
        await controller.stop()


async def until(fetch: Callable[[], Awaitable[Any]], ok: Callable[[Any], bool], timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = await fetch()
        if ok(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"never reached: {got}")
        await asyncio.sleep(0.05)


async def owner(client: Client, kind: str, replicas: int) -> Obj | None:
    """The Pods' controller: a ReplicaSet, a ReplicaSet of a Deployment, a StatefulSet, or none."""
    spec = {"replicas": replicas, "selector": {"matchLabels": LABELS}, "template": TEMPLATE}
    if kind == "none":
        return None
    if kind == "StatefulSet":
        made = await client.create(path("statefulsets", NS, group="apps"), {
            "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
            "spec": {**spec, "serviceName": "web"}})
        return {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": made["metadata"]["uid"],
                "controller": True}
    rs_meta: Obj = {"name": "web-1"}
    if kind == "Deployment":
        deployment = await client.create(path("deployments", NS, group="apps"), {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": spec})
        rs_meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                       "uid": deployment["metadata"]["uid"], "controller": True}]
    made = await client.create(path("replicasets", NS, group="apps"), {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": rs_meta,
        "spec": {**spec, "replicas": 99 if kind == "Deployment" else replicas}})
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": made["metadata"]["uid"],
            "controller": True}


async def pods(client: Client, ref: Obj | None, ready: list[bool]) -> None:
    for n, is_ready in enumerate(ready):
        metadata: Obj = {"name": f"web-{n}", "labels": LABELS}
        if ref is not None:
            metadata["ownerReferences"] = [ref]
        await client.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                                   "spec": TEMPLATE["spec"]})
        await mark(client, NS, f"web-{n}", ready=is_ready)


def budget(**spec: Any) -> Obj:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": LABELS}, **spec}}


CASES = [
    pytest.param({"minAvailable": 2}, "none", 0, [True, True, True], (3, 2, 3, 1), "SufficientPods",
                 id="min-available-int"),
    pytest.param({"minAvailable": 3}, "none", 0, [True, True, False], (3, 3, 2, 0), "InsufficientPods",
                 id="min-available-int-insufficient"),
    pytest.param({"minAvailable": "50%"}, "ReplicaSet", 4, [True, True, True], (4, 2, 3, 1), "SufficientPods",
                 id="min-available-percent-of-scale"),
    pytest.param({"maxUnavailable": 1}, "ReplicaSet", 3, [True, True, True], (3, 2, 3, 1), "SufficientPods",
                 id="max-unavailable"),
    pytest.param({"maxUnavailable": 1}, "ReplicaSet", 3, [True, False, True], (3, 2, 2, 0), "InsufficientPods",
                 id="max-unavailable-one-unready"),
    pytest.param({"maxUnavailable": "34%"}, "Deployment", 3, [True, True, True], (3, 1, 3, 2), "SufficientPods",
                 id="deployment-scale-not-its-replicaset"),
    pytest.param({"maxUnavailable": 1}, "StatefulSet", 2, [True, True], (2, 1, 2, 1), "SufficientPods",
                 id="statefulset-scale"),
    pytest.param({"maxUnavailable": 1}, "none", 0, [True, True], (0, 0, 2, 0), "InsufficientPods",
                 id="unmanaged-pods"),
    pytest.param({"minAvailable": 1}, "none", 0, [], (0, 1, 0, 0), "InsufficientPods", id="no-pods"),
]


@pytest.mark.parametrize(("spec", "kind", "replicas", "ready", "counts", "reason"), CASES)
async def test_budget_status(client: Client, disruption: DisruptionController, spec: Obj, kind: str,
                             replicas: int, ready: list[bool], counts: tuple[int, int, int, int],
                             reason: str) -> None:
    await pods(client, await owner(client, kind, replicas), ready)
    created = await client.create(PDBS, budget(**spec))
    got = await until(lambda: client.get(path("poddisruptionbudgets", NS, "web", group="policy")),
                      lambda b: b["status"].get("observedGeneration") == created["metadata"]["generation"])
    status = got["status"]
    assert (status["expectedPods"], status["desiredHealthy"], status["currentHealthy"],
            status["disruptionsAllowed"]) == counts
    (condition,) = status["conditions"]
    assert condition["type"] == "DisruptionAllowed" and condition["reason"] == reason
    assert condition["status"] == ("True" if reason == "SufficientPods" else "False")
    assert condition["observedGeneration"] == created["metadata"]["generation"]
    await disruption.recorder.flush()
    _, events = await client.list(path("events", NS), fieldSelector="involvedObject.name=web")
    got_reasons = {e["reason"] for e in events if e["involvedObject"]["kind"] == "PodDisruptionBudget"}
    if kind == "none" and "maxUnavailable" in spec:
        assert "UnmanagedPods" in got_reasons
    if not ready:
        assert "NoPods" in got_reasons


async def test_a_controller_without_scale_fails_the_sync(client: Client,
                                                       disruption: DisruptionController) -> None:
    """A Pod whose controller has no scale (here a ConfigMap) cannot be counted against maxUnavailable."""
    config = await client.create(path("configmaps", NS), {"apiVersion": "v1", "kind": "ConfigMap",
                                                          "metadata": {"name": "odd"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "odd", "uid": config["metadata"]["uid"],
           "controller": True}
    await pods(client, ref, [True])
    await client.create(PDBS, budget(maxUnavailable=1))
    got = await until(lambda: client.get(path("poddisruptionbudgets", NS, "web", group="policy")),
                      lambda b: bool(b["status"].get("conditions")))
    (condition,) = got["status"]["conditions"]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False", "SyncFailed", 'found no controllers for pod "web-0"')
    assert got["status"]["disruptionsAllowed"] == 0


async def test_status_follows_readiness(client: Client, disruption: DisruptionController) -> None:
    await pods(client, None, [True, False])
    await client.create(PDBS, budget(minAvailable=1))
    at = path("poddisruptionbudgets", NS, "web", group="policy")
    await until(lambda: client.get(at), lambda b: b["status"].get("currentHealthy") == 1)
    await mark(client, NS, "web-1", ready=True)
    got = await until(lambda: client.get(at), lambda b: b["status"].get("disruptionsAllowed") == 1)
    assert got["status"]["currentHealthy"] == 2


async def evict(client: Client, name: str) -> None:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": NS}}
    await client.create_response(path("pods", NS, name, subresource="eviction"), raw(body))


async def test_eviction_charges_the_budget(client: Client, disruption: DisruptionController) -> None:
    """One disruption allowed: the first eviction goes through and is recorded, the second is refused (429)
    until the controller has seen the Pod go."""
    await pods(client, None, [True, True, True])
    await client.create(PDBS, budget(minAvailable=2))
    at = path("poddisruptionbudgets", NS, "web", group="policy")
    await until(lambda: client.get(at), lambda b: b["status"].get("disruptionsAllowed") == 1)
    await evict(client, "web-0")
    try:
        await evict(client, "web-1")
    except Failed as failed:
        assert failed.status["code"] == 429
    else:
        raise AssertionError("the second eviction went through")
    got = await until(lambda: client.get(at), lambda b: b["status"].get("currentHealthy") == 2
                      and not b["status"].get("disruptedPods"))
    assert got["status"]["disruptionsAllowed"] == 0


@pytest.mark.parametrize(("reason", "phase", "cleared"), [
    ("EvictionByEvictionAPI", "Running", True),
    ("TerminationByKubelet", "Running", False),
    ("EvictionByEvictionAPI", "Failed", False),
])
async def test_stale_disruption_target_is_reset(client: Client, reason: str, phase: str, cleared: bool) -> None:
    """A DisruptionTarget condition left True on a Pod that was not deleted goes False once stale (here 0.3 s),
    unless the kubelet set it or the Pod is terminal."""
    controller = DisruptionController(client.running.core, SharedInformers(client.running.core), stale_timeout=0.3)
    await controller.start()
    try:
        await pods(client, None, [True])
        pod = await client.get(path("pods", NS, "web-0"))
        pod["status"]["phase"] = phase
        pod["status"]["conditions"].append({"type": "DisruptionTarget", "status": "True", "reason": reason,
                                            "lastTransitionTime": pod["status"]["conditions"][0]["lastTransitionTime"]})
        await client.update(path("pods", NS, "web-0", subresource="status"), pod)

        def target(p: Obj) -> Obj:
            return next(c for c in p["status"]["conditions"] if c["type"] == "DisruptionTarget")

        if cleared:
            got = await until(lambda: client.get(path("pods", NS, "web-0")), lambda p: target(p)["status"] == "False")
            assert any(m["manager"] == "DisruptionController" and m.get("subresource") == "status"
                       for m in got["metadata"]["managedFields"])
        else:
            await asyncio.sleep(1.0)
            assert target(await client.get(path("pods", NS, "web-0")))["status"] == "True"
    finally:
        await controller.stop()
