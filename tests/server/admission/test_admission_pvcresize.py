"""A claim's storage request as kube 1.28 lets it change: validation keeps the spec fixed but for a Bound claim's
request, which never shrinks; PersistentVolumeClaimResize admission lets it grow only through a StorageClass that
allows expansion."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.client import Client, Obj, path, refused

NS = "default"
CLAIMS = path("persistentvolumeclaims", NS)
CLAIM = path("persistentvolumeclaims", NS, name="c")
STORAGE_CLASSES = path("storageclasses", group="storage.k8s.io")
RESIZE_REFUSED = ('persistentvolumeclaims "c" is forbidden: only dynamically provisioned pvc can be resized and the '
                  "storageclass that provisions the pvc must support resize")


def storage_class(name: str, **more: Any) -> Obj:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": "example.com/disk", **more}


def claim(size: str = "1Gi", **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}}


async def made(client: Client, classes: list[Obj], spec: Obj, *, bound: bool) -> Obj:
    for cls in classes:
        await client.create(STORAGE_CLASSES, cls)
    created = await client.create(CLAIMS, claim(**spec))
    if bound:
        created["status"] = {"phase": "Bound", "capacity": {"storage": "1Gi"}}
        created, _ = await client.update(path("persistentvolumeclaims", NS, name="c", subresource="status"), created)
    return created


def resized(obj: Obj, size: str) -> Obj:
    obj["spec"]["resources"]["requests"]["storage"] = size
    return obj


@pytest.mark.parametrize(("classes", "spec", "size"), [
    ([storage_class("grow", allowVolumeExpansion=True)], {"storageClassName": "grow"}, "2Gi"),
    ([], {}, "1Gi"),  # the same size is no resize, whatever the class
    ([], {}, "1024Mi"),  # nor the same size spelled another way
])
async def test_a_bound_claim_grows_through_a_class_that_allows_it(client: Client, classes: list[Obj], spec: Obj,
                                                                  size: str) -> None:
    created = await made(client, classes, spec, bound=True)
    updated, _ = await client.update(CLAIM, resized(created, size))
    assert updated["spec"]["resources"]["requests"]["storage"] == ("2Gi" if size == "2Gi" else "1Gi")


@pytest.mark.parametrize(("classes", "spec", "bound", "size", "code", "message"), [
    ([storage_class("fixed")], {"storageClassName": "fixed"}, True, "2Gi", 403, RESIZE_REFUSED),
    ([storage_class("fixed", allowVolumeExpansion=False)], {"storageClassName": "fixed"}, True, "2Gi", 403,
     RESIZE_REFUSED),
    ([], {"storageClassName": "missing"}, True, "2Gi", 403, RESIZE_REFUSED),
    ([], {"storageClassName": ""}, True, "2Gi", 403, RESIZE_REFUSED),  # no class: not dynamically provisioned
    # an unbound claim's spec is fixed, its request too (validation's 422 comes before admission)
    ([storage_class("grow", allowVolumeExpansion=True)], {"storageClassName": "grow"}, False, "2Gi", 422,
     'PersistentVolumeClaim "c" is invalid: spec: Forbidden: spec is immutable after creation except '
     "resources.requests for bound claims"),
    ([storage_class("grow", allowVolumeExpansion=True)], {"storageClassName": "grow"}, True, "512Mi", 422,
     'PersistentVolumeClaim "c" is invalid: spec.resources.requests.storage: Forbidden: field can not be less than '
     "previous value"),
])
async def test_what_cannot_follow_is_refused(client: Client, classes: list[Obj], spec: Obj, bound: bool, size: str,
                                             code: int, message: str) -> None:
    created = await made(client, classes, spec, bound=bound)
    failed = await refused(client.update(CLAIM, resized(created, size)))
    assert (failed.status["code"], failed.status["message"]) == (code, message)


@pytest.mark.parametrize(("change", "allowed"), [
    ({"volumeName": "pv-1"}, True),  # set once, by the binder
    ({"storageClassName": "late"}, True),  # a class where none was: the retroactive default class
    ({"accessModes": ["ReadWriteMany"]}, False),
    ({"volumeMode": "Block"}, False),
])
async def test_the_rest_of_a_claims_spec_is_fixed(client: Client, change: Obj, allowed: bool) -> None:
    created = await client.create(CLAIMS, claim())
    created["spec"].update(change)
    if allowed:
        updated, _ = await client.update(CLAIM, created)
        assert {k: updated["spec"][k] for k in change} == change
    else:
        failed = await refused(client.update(CLAIM, created))
        assert failed.status["code"] == 422
