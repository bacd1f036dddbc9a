"""Storage object in-use protection: StorageObjectInUseProtection admission gives new claims and volumes their
finalizer, and the pvc-protection and pv-protection controllers (server/controllers/protection.py) hold a deleted
claim while a scheduled Pod uses it and a deleted volume while it is Bound, as kube 1.28's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from server.controllers.protection import PVCProtectionController, PVProtectionController, pod_uses_claim
from server.runtime.informer import SharedInformers
from tests.server.client import Client, Failed, Obj, path

NS = "default"
CLAIMS = path("persistentvolumeclaims", NS)
VOLUMES = path("persistentvolumes")
PODS = path("pods", NS)


def claim(name: str = "data", **meta: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, **meta},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def volume(name: str = "vol") -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/d"}}}


def pod(name: str = "user", claim_name: str = "data", **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx"}],
                     "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": claim_name}}], **spec}}


@pytest.fixture
async def protected(client: Client) -> AsyncIterator[Client]:
    informers = SharedInformers(client.running.core)
    controllers = [PVCProtectionController(client.running.core, informers),
                   PVProtectionController(client.running.core, informers)]
    for controller in controllers:
        await controller.start()
    try:
        yield client
    finally:
        for controller in controllers:
            await controller.stop()


async def gone(client: Client, at: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            await client.get(at)
        except Failed as failed:
            if failed.status["code"] == 404:
                return True
            raise
        await asyncio.sleep(0.02)
    return False


async def test_new_claims_and_volumes_get_their_protection_finalizer(client: Client) -> None:
    assert (await client.create(CLAIMS, claim()))["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert (await client.create(VOLUMES, volume()))["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    # one given already is not given twice; others are kept
    held = await client.create(CLAIMS, claim("held", finalizers=["example.com/x", "kubernetes.io/pvc-protection"]))
    assert held["metadata"]["finalizers"] == ["example.com/x", "kubernetes.io/pvc-protection"]


@pytest.mark.parametrize(("user", "held"), [
    (None, False),  # no Pod at all
    (pod(nodeName="node-1"), True),  # a scheduled Pod holds it
    (pod(), False),  # an unscheduled one does not: no kubelet will start it now
    (pod(nodeName="node-1", claim_name="other"), False),  # a Pod of another claim
])
async def test_a_deleted_claim_waits_for_the_pods_that_use_it(protected: Client, user: Obj | None,
                                                              held: bool) -> None:
    client = protected
    await client.create(CLAIMS, claim())
    if user is not None:
        await client.create(PODS, user)
    await client.delete(path("persistentvolumeclaims", NS, "data"))
    assert await gone(client, path("persistentvolumeclaims", NS, "data"), 1.0 if held else 5.0) is not held
    if held:  # the Pod gone, the claim goes
        await client.delete(path("pods", NS, "user"), gracePeriodSeconds=0)
        assert await gone(client, path("persistentvolumeclaims", NS, "data"))


async def test_a_deleted_volume_waits_while_bound(protected: Client) -> None:
    client = protected
    created = await client.create(VOLUMES, volume())
    created["status"] = {"phase": "Bound"}
    await client.update(path("persistentvolumes", name="vol", subresource="status"), created)
    await client.delete(path("persistentvolumes", name="vol"))
    assert not await gone(client, path("persistentvolumes", name="vol"), 1.0)
    held = await client.get(path("persistentvolumes", name="vol"))
    held["status"] = {"phase": "Released"}
    await client.update(path("persistentvolumes", name="vol", subresource="status"), held)
    assert await gone(client, path("persistentvolumes", name="vol"))


async def test_the_controllers_give_the_finalizer_to_claims_that_lack_it(protected: Client) -> None:
    client = protected
    created = await client.create_unprotected(CLAIMS, claim())
    assert "finalizers" not in created["metadata"]
    deadline = time.monotonic() + 5
    while not (await client.get(path("persistentvolumeclaims", NS, "data")))["metadata"].get("finalizers"):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)


def ephemeral_pod(**meta: Any) -> Obj:
    return {"metadata": {"name": "web", "uid": "u1", **meta},
            "spec": {"nodeName": "n", "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]}}


OWNED = {"ownerReferences": [{"uid": "u1", "controller": True}]}


@pytest.mark.parametrize(("pod_of", "claim_meta", "uses"), [
    (lambda: ephemeral_pod(), {"name": "web-scratch", **OWNED}, True),
    (lambda: ephemeral_pod(), {"name": "web-scratch"}, False),  # a claim of that name the Pod does not own
    (lambda: ephemeral_pod(deletionTimestamp="2026-01-01T00:00:00Z", deletionGracePeriodSeconds=0),
     {"name": "web-scratch", **OWNED}, False),  # deleted at once: its volumes are released
    (lambda: ephemeral_pod(deletionTimestamp="2026-01-01T00:00:00Z", deletionGracePeriodSeconds=30),
     {"name": "web-scratch", **OWNED}, True),
])
def test_a_pods_generic_ephemeral_volume_holds_its_own_claim(pod_of: Callable[[], Obj], claim_meta: Obj,
                                                            uses: bool) -> None:
    assert pod_uses_claim(pod_of(), {"metadata": claim_meta}) is uses
