"""The persistentvolume-binder through a real core (pkg/controller/volume/persistentvolume's simple cases): claims
bound to the volume that fits best, pre-bound volumes and claims, the simulated provisioner with Immediate and
WaitForFirstConsumer binding, and reclaim policies when the claim goes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.client import Client, Obj, path
from tests.server.controllers.stateful import (
    NS,
    events_of,
    get_or_none,
    settled,
    stateful_client_fixture,  # noqa: F401  (the stateful_client fixture)
)

VOLUMES = path("persistentvolumes")
CLAIMS = path("persistentvolumeclaims", NS)
CLASSES = path("storageclasses", group="storage.k8s.io")


def volume(name: str, size: str, *, modes: tuple[str, ...] = ("ReadWriteOnce",), klass: str = "",
           labels: dict[str, str] | None = None, policy: str = "Retain", claim_ref: Obj | None = None) -> Obj:
    spec: Obj = {"capacity": {"storage": size}, "accessModes": list(modes), "persistentVolumeReclaimPolicy": policy,
                 "hostPath": {"path": f"/data/{name}"}}
    if klass:
        spec["storageClassName"] = klass
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec}


def claim(size: str = "1Gi", *, name: str = "data", modes: tuple[str, ...] = ("ReadWriteOnce",), klass: str = "",
          selector: Obj | None = None, volume_name: str = "") -> Obj:
    spec: Obj = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if klass:
        spec["storageClassName"] = klass
    if selector is not None:
        spec["selector"] = selector
    if volume_name:
        spec["volumeName"] = volume_name
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


def storage_class(name: str, *, mode: str = "Immediate", policy: str = "Delete",
                  provisioner: str = "capstan.io/simulated") -> Obj:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "reclaimPolicy": policy, "volumeBindingMode": mode}


async def claim_state(client: Client, name: str = "data") -> tuple[str, str]:
    got = await client.get(path("persistentvolumeclaims", NS, name))
    return (got.get("status") or {}).get("phase", ""), (got.get("spec") or {}).get("volumeName", "")


async def volume_phase(client: Client, name: str) -> str | None:
    got = await get_or_none(client, "persistentvolumes", name, "")
    return None if got is None else str((got.get("status") or {}).get("phase", ""))


@pytest.mark.parametrize(("volumes", "wanted", "chosen"), [
    pytest.param([volume("small", "1Gi"), volume("big", "10Gi"), volume("mid", "5Gi")], claim("2Gi"), "mid",
                 id="smallest-that-fits"),
    pytest.param([volume("rwx", "1Gi", modes=("ReadWriteOnce", "ReadWriteMany")), volume("rwo", "2Gi")], claim(),
                 "rwo", id="fewest-access-modes-first"),
    pytest.param([volume("slow", "1Gi", klass="slow"), volume("none", "1Gi")], claim(klass="slow"), "slow",
                 id="storage-class"),
    pytest.param([volume("a", "1Gi", labels={"disk": "hdd"}), volume("b", "2Gi", labels={"disk": "ssd"})],
                 claim(selector={"matchLabels": {"disk": "ssd"}}), "b", id="selector"),
    pytest.param([volume("a", "1Gi"), volume("b", "1Gi")], claim(volume_name="b"), "b", id="claim-names-volume"),
    pytest.param([volume("a", "1Gi"), volume("b", "5Gi", claim_ref={"namespace": NS, "name": "data"})], claim(), "b",
                 id="volume-pre-bound-to-claim"),
])
async def test_a_claim_binds_the_volume_that_fits(stateful_client: Client, volumes: list[Obj], wanted: Obj,
                                                  chosen: str) -> None:
    client = stateful_client
    for body in volumes:
        await client.create(VOLUMES, body)
    created = await client.create(CLAIMS, wanted)
    await settled(lambda: claim_state(client), ("Bound", chosen))
    await settled(lambda: volume_phase(client, chosen), "Bound")
    pv = await client.get(path("persistentvolumes", "", chosen))
    got = await client.get(path("persistentvolumeclaims", NS, "data"))
    ref = pv["spec"]["claimRef"]
    assert (ref["kind"], ref["namespace"], ref["name"], ref["uid"]) == (
        "PersistentVolumeClaim", NS, "data", created["metadata"]["uid"])
    # bindVolumeToClaim marks a volume it gave a claimRef; bindClaimToVolume a claim it gave a volumeName
    controller_set_ref = "claimRef" not in next(v for v in volumes if v["metadata"]["name"] == chosen)["spec"]
    assert got["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    assert ("pv.kubernetes.io/bound-by-controller" in got["metadata"]["annotations"]) == (
        not wanted["spec"].get("volumeName"))
    assert ("pv.kubernetes.io/bound-by-controller" in pv["metadata"].get("annotations", {})) == controller_set_ref
    assert got["status"]["capacity"] == pv["spec"]["capacity"]
    assert got["status"]["accessModes"] == pv["spec"]["accessModes"]
    async def others() -> list[str | None]:
        return [await volume_phase(client, v["metadata"]["name"]) for v in volumes if v["metadata"]["name"] != chosen]

    await settled(others, ["Available"] * (len(volumes) - 1))


async def test_no_volume_leaves_the_claim_pending(stateful_client: Client) -> None:
    client = stateful_client
    await client.create(VOLUMES, volume("small", "1Gi"))
    await client.create(CLAIMS, claim("5Gi"))
    reason = ("FailedBinding", "no persistent volumes available for this claim and no storage class is set")
    await settled(lambda: events_of(client, "data"), lambda events: reason in events)
    assert await claim_state(client) == ("Pending", "")
    await client.create(VOLUMES, volume("large", "5Gi"))
    await settled(lambda: claim_state(client), ("Bound", "large"))


@pytest.mark.parametrize(("policy", "after"), [("Delete", None), ("Retain", "Released")])
async def test_the_simulated_provisioner_and_reclaim(stateful_client: Client, policy: str, after: str | None) -> None:
    client = stateful_client
    await client.create(CLASSES, storage_class("fast", policy=policy))
    created = await client.create(CLAIMS, claim("3Gi", klass="fast"))
    name = f"pvc-{created['metadata']['uid']}"
    await settled(lambda: claim_state(client), ("Bound", name))
    pv = await client.get(path("persistentvolumes", "", name))
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "capstan.io/simulated"
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == policy
    assert pv["spec"]["capacity"] == {"storage": "3Gi"} and pv["spec"]["storageClassName"] == "fast"
    got = await client.get(path("persistentvolumeclaims", NS, "data"))
    assert got["metadata"]["annotations"]["volume.kubernetes.io/storage-provisioner"] == "capstan.io/simulated"
    assert ("ProvisioningSucceeded", f"Successfully provisioned volume {name} using capstan.io/simulated") in \
        await events_of(client, "data")
    await client.delete(path("persistentvolumeclaims", NS, "data"))
    await settled(lambda: volume_phase(client, name), after)


async def test_wait_for_first_consumer_binds_once_a_pod_is_scheduled(stateful_client: Client) -> None:
    client = stateful_client
    await client.create(CLASSES, storage_class("local", mode="WaitForFirstConsumer"))
    await client.create(CLAIMS, claim(klass="local"))
    reason = ("WaitForFirstConsumer", "waiting for first consumer to be created before binding")
    await settled(lambda: events_of(client, "data"), lambda events: reason in events)
    assert await claim_state(client) == ("Pending", "")
    await client.create(path("nodes"), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}})
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}}
    await client.create(path("pods", NS), pod)
    await client.create(path("pods", NS, "user", subresource="binding"), {
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "user"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}})
    _, bound = await settled(lambda: claim_state(client), lambda state: state[0] == "Bound")
    got = await client.get(path("persistentvolumeclaims", NS, "data"))
    assert got["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "node-1"
    assert bound.startswith("pvc-")


async def test_a_bound_volume_whose_claim_goes_is_released(stateful_client: Client) -> None:
    client = stateful_client
    await client.create(VOLUMES, volume("kept", "1Gi"))
    await client.create(CLAIMS, claim())
    await settled(lambda: claim_state(client), ("Bound", "kept"))
    await client.delete(path("persistentvolumeclaims", NS, "data"))
    await settled(lambda: volume_phase(client, "kept"), "Released")
    await client.create(CLAIMS, claim())  # a new claim of that name is not the one the volume was bound to
    reason = ("FailedBinding", "no persistent volumes available for this claim and no storage class is set")
    await settled(lambda: events_of(client, "data"), lambda events: reason in events)
    assert await volume_phase(client, "kept") == "Released"
