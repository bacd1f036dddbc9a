"""DefaultStorageClass and DefaultIngressClass admission (plugin/pkg/admission/storage/storageclass/setdefault,
plugin/pkg/admission/network/defaultingressclass): a new claim or Ingress that names no class gets the cluster's
default one, so that provisioners and ingress controllers that serve only their own class pick it up, as on any
cluster where an administrator marked a class the default.

- A PersistentVolumeClaim without `spec.storageClassName` (an empty name is a choice: no class) and without the
  beta `volume.beta.kubernetes.io/storage-class` annotation takes the StorageClass annotated
  `storageclass.kubernetes.io/is-default-class: "true"` (or the beta annotation).
- An Ingress without `spec.ingressClassName` and without the `kubernetes.io/ingress.class` annotation takes the
  IngressClass annotated `ingressclass.kubernetes.io/is-default-class: "true"`.
- Of several defaults the newest wins, the first by name among those created in the same second; with none,
  nothing changes. Only creates are judged, never subresources.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from server.kinds.corev1 import BETA_STORAGE_CLASS
from server.machinery.values import Obj
from server.objects import render
from server.objects.admitting import Attributes
from server.objects.context import Context
from server.objects.storeerrors import store_call


@dataclass(frozen=True, slots=True)
class Defaulted:
    """One plugin: the kind it defaults, where its class's name goes, and how a class says it is the default."""

    name: str
    group: str
    resource: str
    classes: tuple[str, str, str]  # the class kind's group, version and resource
    field: str  # the spec field naming the class
    chosen: Callable[[Obj], bool]  # whether the object (its metadata) already chose a class some other way
    default_annotations: tuple[str, ...]

    def handles(self, attrs: Attributes) -> bool:
        r = attrs.resource
        return (attrs.operation == "CREATE" and attrs.obj is not None and not attrs.subresource
                and attrs.kind is None and r.group == self.group and r.resource == self.resource)

    def is_default(self, cls: Obj) -> bool:
        annotations = (cls.get("metadata") or {}).get("annotations") or {}
        return any(annotations.get(a) == "true" for a in self.default_annotations)


def _annotated(key: str) -> Callable[[Obj], bool]:
    return lambda obj: key in ((obj.get("metadata") or {}).get("annotations") or {})


STORAGE = Defaulted(
    "DefaultStorageClass", "", "persistentvolumeclaims", ("storage.k8s.io", "v1", "storageclasses"),
    "storageClassName", _annotated(BETA_STORAGE_CLASS),
    ("storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"))
INGRESS = Defaulted(
    "DefaultIngressClass", "networking.k8s.io", "ingresses", ("networking.k8s.io", "v1", "ingressclasses"),
    "ingressClassName", _annotated("kubernetes.io/ingress.class"),
    ("ingressclass.kubernetes.io/is-default-class",))
PLUGINS = (STORAGE, INGRESS)


def newest(classes: list[Obj]) -> Obj | None:
    """The newest class, the first by name among those created in the same second (GetDefaultClass's order)."""
    def key(cls: Obj) -> tuple[str, str]:
        meta = cls.get("metadata") or {}
        return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")
    # creationTimestamp is RFC 3339 in UTC, so its text sorts as its time: newest first, then names ascending
    ordered = sorted(classes, key=lambda c: key(c)[1])
    ordered.sort(key=lambda c: key(c)[0], reverse=True)
    return ordered[0] if ordered else None


async def admit(plugin: Defaulted, ctx: Context, attrs: Attributes) -> None:
    """Name the default class in a new object that names none (in place)."""
    obj = attrs.obj
    assert obj is not None
    spec = obj.get("spec") or {}
    if spec.get(plugin.field) is not None or plugin.chosen(obj):
        return
    classes = ctx.registry.get(*plugin.classes)
    if classes is None:
        return
    listed = await store_call(ctx.store.list(classes.key_prefix("")))
    found = newest([cls for cls in map(render.load, (kv.value for kv in listed.kvs)) if plugin.is_default(cls)])
    if found is not None:
        obj.setdefault("spec", {})[plugin.field] = (found.get("metadata") or {}).get("name") or ""
