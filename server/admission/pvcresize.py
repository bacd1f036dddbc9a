"""PersistentVolumeClaimResize admission (plugin/pkg/admission/storage/persistentvolume/resize): a claim's storage
request may grow only where the volume can follow, as kube-apiserver 1.28 decides it.

A claim whose `spec.resources.requests.storage` grows must be Bound (403 `Only bound persistent volume claims
can be expanded`) and keep a StorageClass, the same before and after, whose `allowVolumeExpansion` is true (403
`only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support
resize`). A claim's class is its beta `volume.beta.kubernetes.io/storage-class` annotation, else
`spec.storageClassName`. Only updates of the claim itself are judged, never its subresources.
"""

from __future__ import annotations

from server.kinds.corev1 import compare_requests, storage_class_of, storage_request
from server.machinery import errors
from server.objects import render
from server.objects.admitting import Attributes
from server.objects.context import Context
from server.objects.storeerrors import store_call

NAME = "PersistentVolumeClaimResize"


def handles(attrs: Attributes) -> bool:
    r = attrs.resource
    return (attrs.operation == "UPDATE" and attrs.obj is not None and attrs.old is not None and not attrs.subresource
            and attrs.kind is None and r.group == "" and r.resource == "persistentvolumeclaims")


async def _expandable(ctx: Context, name: str) -> bool:
    classes = ctx.registry.get("storage.k8s.io", "v1", "storageclasses")
    if classes is None:
        return False
    got = await store_call(ctx.store.get(classes.key("", name)))
    return got.kv is not None and render.load(got.kv.value).get("allowVolumeExpansion") is True


async def validate(ctx: Context, attrs: Attributes) -> None:
    assert attrs.obj is not None and attrs.old is not None
    new, old = storage_request(attrs.obj.get("spec") or {}), storage_request(attrs.old.get("spec") or {})
    if compare_requests(new, old) <= 0:
        return  # not grown (or unreadable: the claim's validation refuses it)
    if (attrs.old.get("status") or {}).get("phase") != "Bound":
        raise errors.forbidden(attrs.resource.resource, "", attrs.name,
                               "Only bound persistent volume claims can be expanded")
    new_class, old_class = storage_class_of(attrs.obj), storage_class_of(attrs.old)
    if not new_class or new_class != old_class or not await _expandable(ctx, new_class):
        raise errors.forbidden(attrs.resource.resource, "", attrs.name,
                               "only dynamically provisioned pvc can be resized and the storageclass that provisions "
                               "the pvc must support resize")
