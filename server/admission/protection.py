"""StorageObjectInUseProtection admission (plugin/pkg/admission/storage/storageobjectinuseprotection): every new
PersistentVolumeClaim gets the `kubernetes.io/pvc-protection` finalizer and every new PersistentVolume
`kubernetes.io/pv-protection`, so that deleting one a Pod still uses, or one still bound, leaves it Terminating
until the protection controllers (server/controllers/protection.py) find it free, as kube-apiserver 1.28 and
kube-controller-manager do it. Only creates of the objects themselves are judged; a finalizer given already is
not given twice.
"""

from __future__ import annotations

from server.machinery.values import Obj
from server.objects.admitting import Attributes

NAME = "StorageObjectInUseProtection"
FINALIZERS = {"persistentvolumeclaims": "kubernetes.io/pvc-protection",
              "persistentvolumes": "kubernetes.io/pv-protection"}


def handles(attrs: Attributes) -> bool:
    r = attrs.resource
    return (attrs.operation == "CREATE" and attrs.obj is not None and not attrs.subresource and attrs.kind is None
            and r.group == "" and r.resource in FINALIZERS)


def admit(attrs: Attributes) -> None:
    """Add the kind's protection finalizer to the new object (in place)."""
    assert attrs.obj is not None
    finalizer = FINALIZERS[attrs.resource.resource]
    meta: Obj = attrs.obj.setdefault("metadata", {})
    finalizers = list(meta.get("finalizers") or [])
    if finalizer not in finalizers:
        meta["finalizers"] = [*finalizers, finalizer]
