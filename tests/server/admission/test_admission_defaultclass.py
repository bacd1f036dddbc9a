"""DefaultStorageClass and DefaultIngressClass admission: a new claim or Ingress naming no class gets the default
one, as kube's plugins set it; one that chose (a name, an empty name, the older annotation) keeps its choice."""

from __future__ import annotations

from typing import Any

import pytest

from server.admission.defaultclass import newest
from tests.server.client import Client, Obj, path

NS = "default"
STORAGE_CLASSES = path("storageclasses", group="storage.k8s.io")
INGRESS_CLASSES = path("ingressclasses", group="networking.k8s.io")
STORAGE_DEFAULT = "storageclass.kubernetes.io/is-default-class"
STORAGE_BETA_DEFAULT = "storageclass.beta.kubernetes.io/is-default-class"
INGRESS_DEFAULT = "ingressclass.kubernetes.io/is-default-class"


def storage_class(name: str, **annotations: str) -> Obj:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "annotations": annotations}, "provisioner": "example.com/disk"}


def ingress_class(name: str, **annotations: str) -> Obj:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": {"name": name, "annotations": annotations}, "spec": {"controller": "example.com/ingress"}}


def claim(annotations: dict[str, str] | None = None, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c", "annotations": annotations or {}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec}}


def ingress(annotations: dict[str, str] | None = None, **spec: Any) -> Obj:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "i", "annotations": annotations or {}},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}, **spec}}


@pytest.mark.parametrize(("classes", "obj", "expected"), [
    ([], claim(), None),
    ([storage_class("slow")], claim(), None),  # not marked the default
    ([storage_class("slow", **{STORAGE_DEFAULT: "false"})], claim(), None),
    ([storage_class("standard", **{STORAGE_DEFAULT: "true"})], claim(), "standard"),
    ([storage_class("standard", **{STORAGE_BETA_DEFAULT: "true"})], claim(), "standard"),
    ([storage_class("slow"), storage_class("standard", **{STORAGE_DEFAULT: "true"})], claim(), "standard"),
    # a claim that chose keeps its choice: a name, an empty name (no class), the beta annotation
    ([storage_class("standard", **{STORAGE_DEFAULT: "true"})], claim(storageClassName="fast"), "fast"),
    ([storage_class("standard", **{STORAGE_DEFAULT: "true"})], claim(storageClassName=""), ""),
    ([storage_class("standard", **{STORAGE_DEFAULT: "true"})],
     claim({"volume.beta.kubernetes.io/storage-class": "fast"}), None),
])
async def test_a_new_claim_takes_the_default_storage_class(client: Client, classes: list[Obj], obj: Obj,
                                                           expected: str | None) -> None:
    for cls in classes:
        await client.create(STORAGE_CLASSES, cls)
    created = await client.create(path("persistentvolumeclaims", NS), obj)
    assert created["spec"].get("storageClassName") == expected


@pytest.mark.parametrize(("classes", "obj", "expected"), [
    ([], ingress(), None),
    ([ingress_class("nginx")], ingress(), None),
    ([ingress_class("nginx", **{INGRESS_DEFAULT: "true"})], ingress(), "nginx"),
    ([ingress_class("nginx", **{INGRESS_DEFAULT: "true"})], ingress(ingressClassName="traefik"), "traefik"),
    ([ingress_class("nginx", **{INGRESS_DEFAULT: "true"})], ingress({"kubernetes.io/ingress.class": "traefik"}),
     None),
])
async def test_a_new_ingress_takes_the_default_ingress_class(client: Client, classes: list[Obj], obj: Obj,
                                                             expected: str | None) -> None:
    for cls in classes:
        await client.create(INGRESS_CLASSES, cls)
    created = await client.create(path("ingresses", NS, group="networking.k8s.io"), obj)
    assert created["spec"].get("ingressClassName") == expected


async def test_an_update_is_not_defaulted(client: Client) -> None:
    created = await client.create(path("persistentvolumeclaims", NS), claim())
    await client.create(STORAGE_CLASSES, storage_class("standard", **{STORAGE_DEFAULT: "true"}))
    created["metadata"]["labels"] = {"updated": "yes"}
    updated, _ = await client.update(path("persistentvolumeclaims", NS, name="c"), created)
    assert updated["spec"].get("storageClassName") is None


def made(name: str, at: str) -> Obj:
    return {"metadata": {"name": name, "creationTimestamp": at}}


@pytest.mark.parametrize(("classes", "chosen"), [
    ([], None),
    ([made("a", "2026-01-01T00:00:00Z")], "a"),
    ([made("old", "2026-01-01T00:00:00Z"), made("new", "2026-01-02T00:00:00Z")], "new"),
    ([made("new", "2026-01-02T00:00:00Z"), made("old", "2026-01-01T00:00:00Z")], "new"),
    # created in the same second: the first by name
    ([made("b", "2026-01-01T00:00:00Z"), made("a", "2026-01-01T00:00:00Z")], "a"),
])
def test_of_several_defaults_the_newest_wins(classes: list[Obj], chosen: str | None) -> None:
    found = newest(classes)
    assert (found["metadata"]["name"] if found is not None else None) == chosen
