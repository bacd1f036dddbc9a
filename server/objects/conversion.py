"""Values of a resource stored at another version, converted on the way in and out (Resource.converter).

A custom resource whose CRD converts by webhook keeps every object at the storage version; the verbs see
objects at the version the request names. Contract:
- `kvs`/`values`: stored values (storage version) -> values at the resource's version, one call for the whole
  batch; a failed call fails the batch whole (a list fails, a watch ends with an ERROR event).
- `to_storage`: an object at the resource's version -> at the storage version, before it is rendered to a value.
- A resource without a converter, or served at the storage version while nothing can be stored at another
  (the CRD's status.storedVersions holds only it), passes through untouched.
- A stored value is converted from the apiVersion it was written at (server/machinery/stored.py's written-at
  trailer; a value without one is at the current storage version), so objects written before the storage
  version changed are read as what they are, as kube reads etcd's copies, and a value already at the
  requested version is not sent.
Stored values hold no apiVersion, kind or resourceVersion: they are added for the converter and removed from
what it answers.
"""

from __future__ import annotations

from collections.abc import Sequence

from server.machinery import stored
from server.machinery.values import Obj
from server.objects import render
from server.registry.resources import Resource
from storage import Event, KeyValue


def converts(resource: Resource) -> bool:
    """Whether a write converts: the resource is served at another version than the storage version."""
    return resource.converter is not None and resource.converter.storage_version != resource.version


def reads_converted(resource: Resource) -> bool:
    """Whether a read may convert: a write does, or values may be stored at an earlier storage version."""
    converter = resource.converter
    return converter is not None and (converter.storage_version != resource.version
                                      or any(v != resource.version for v in converter.stored_versions))


def _storage_api_version(resource: Resource) -> str:
    assert resource.converter is not None
    return render.written_at(resource)


async def values(resource: Resource, raw: Sequence[bytes]) -> list[bytes]:
    """Stored values as values at the resource's version (empty values, a delete's, stay empty)."""
    if not reads_converted(resource) or not raw:
        return list(raw)
    assert resource.converter is not None
    storage = _storage_api_version(resource)
    wanted = []
    objs = []
    for i, value in enumerate(raw):
        if not value:
            continue
        source = stored.written_at(value) or storage
        if source == resource.api_version:
            continue
        wanted.append(i)
        objs.append({"apiVersion": source, "kind": resource.kind, **render.load(value)})
    converted = await resource.converter.convert(objs, resource.api_version) if objs else []
    out = list(raw)
    for i, obj in zip(wanted, converted, strict=True):
        obj = dict(obj)
        obj.pop("apiVersion", None)
        obj.pop("kind", None)
        (obj.get("metadata") or {}).pop("resourceVersion", None)
        out[i] = stored.pack(render.go_json(obj), b"")
    return out


async def value(resource: Resource, raw: bytes) -> bytes:
    return (await values(resource, [raw]))[0]


async def kvs(resource: Resource, listed: Sequence[KeyValue]) -> list[KeyValue]:
    if not reads_converted(resource):
        return list(listed)
    new = await values(resource, [kv.value for kv in listed])
    return [kv._replace(value=v) for kv, v in zip(listed, new, strict=True)]


async def events(resource: Resource, batch: Sequence[Event]) -> Sequence[Event]:
    """A watch batch with its objects (new and previous) at the resource's version, in one call."""
    if not reads_converted(resource):
        return batch
    raw: list[bytes] = []
    for event in batch:
        raw.append(event.kv.value)
        raw.append(event.prev.value if event.prev is not None else b"")
    new = await values(resource, raw)
    out = []
    for i, event in enumerate(batch):
        prev = event.prev._replace(value=new[2 * i + 1]) if event.prev is not None else None
        out.append(event._replace(kv=event.kv._replace(value=new[2 * i]), prev=prev))
    return out


async def to_storage(resource: Resource, obj: Obj) -> Obj:
    """An object at the resource's version as the storage version holds it."""
    if not converts(resource):
        return obj
    assert resource.converter is not None
    sent = {**obj, "apiVersion": resource.api_version, "kind": resource.kind}
    converted = dict((await resource.converter.convert([sent], _storage_api_version(resource)))[0])
    converted.pop("apiVersion", None)
    converted.pop("kind", None)
    return converted
