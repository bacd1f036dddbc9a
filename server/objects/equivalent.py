"""Equivalent resources, as kube-apiserver's EquivalentResourceMapper keeps them, and the conversion of an object
between them: what admission webhooks with `matchPolicy: Equivalent` are called with.

Contract:
- Two served resources are equivalent when they share storage (the same storage keys: the versions of one
  group/resource, a CRD's served versions, and a resource stored as another, such as events.k8s.io/v1 Events
  in core/v1's); for a subresource, only those that serve that subresource. `equivalents` lists them in the
  registry's order, the resource itself among them.
- `kind_of` is what a request through (resource, subresource) carries: the subresource's own kind when it has
  one (/scale: autoscaling/v1 Scale), else the resource's.
- `convert` turns an object of one equivalent resource into the other's form: through the storage form for a
  resource stored as another (its StoredAs conversions), by the resource's converter (a CRD's conversion
  webhook) where it has one, and by its apiVersion alone otherwise (a CRD without conversion). A subresource
  whose kind does not depend on the resource's version (Scale, Binding, Eviction) is not converted.
"""

from __future__ import annotations

from dataclasses import dataclass

from server.machinery.meta import canonical
from server.machinery.values import Obj
from server.registry.resources import Registry, Resource


@dataclass(frozen=True, slots=True)
class Kind:
    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def _storage(resource: Resource) -> bytes:
    return resource.key_prefix()


def equivalents(registry: Registry, resource: Resource, subresource: str = "") -> list[Resource]:
    """The served resources sharing `resource`'s storage (itself included) that serve `subresource`."""
    key = _storage(resource)
    return [r for r in registry if _storage(r) == key and (not subresource or r.subresource(subresource) is not None)]


def kind_of(resource: Resource, subresource: str = "") -> Kind:
    """The kind of a request through (resource, subresource), as kube's KindFor answers it."""
    sub = resource.subresource(subresource) if subresource else None
    if sub is not None and sub.group + sub.version:
        return Kind(sub.group, sub.version, sub.kind)
    if sub is not None and sub.kind != resource.kind:
        return Kind(resource.group, resource.version, sub.kind)
    return Kind(resource.group, resource.version, resource.kind)


def converts(source: Resource, target: Resource, subresource: str = "") -> bool:
    """Whether an object of a request through (source, subresource) changes form for target."""
    return source is not target and kind_of(source, subresource).kind == source.kind


async def convert(obj: Obj, source: Resource, target: Resource) -> Obj:
    """obj, an object in source's form (kind and apiVersion optional), in target's form with target's kind and
    apiVersion. A conversion webhook's failure raises its ApiError."""
    body = {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    if source.converter is not None:
        given = {"apiVersion": source.api_version, "kind": source.kind, **body}
        (converted,) = await source.converter.convert([given], target.api_version)
        body = {k: v for k, v in converted.items() if k not in ("kind", "apiVersion")}
    elif source.stored_as is not None or target.stored_as is not None:
        if source.stored_as is not None:
            body = canonical(source.stored_as.to_storage(body))
        if target.stored_as is not None:
            body = canonical(target.stored_as.from_storage(body))
    return {"apiVersion": target.api_version, "kind": target.kind, **body}
