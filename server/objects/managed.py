"""metadata.managedFields kept on every write, as kube-apiserver's field manager keeps them.

A create, an update (PUT) and a non-apply patch record an Update entry for their manager with the
fields they added or changed (server/machinery/fields/updater.py); managedFields sent in the body are taken
as the new starting point when they are a valid non-empty list (so clients may edit them), a list
of one empty entry clears them, and anything else keeps the stored ones. Through a subresource the
body's managedFields are never taken, and the writer gains only the subresource's field and the metadata it
keeps (server/registry/resources.py Subresource.metadata_reset).
"""

from __future__ import annotations

import weakref
from typing import Any

from server.machinery import meta
from server.machinery.fields import created, managers, updater
from server.machinery.fields.fieldset import FieldSet
from server.machinery.fields.managers import Managed, Owner
from server.machinery.fields.shapes import UNTYPED, Shape, of_message
from server.machinery.schema import JsonSchema
from server.machinery.values import Obj
from server.registry.resources import Resource, Schema


def shape(resource: Resource) -> Shape:
    """A built-in kind's shape comes from its protobuf descriptor, a custom resource's from its CRD schema."""
    if isinstance(resource.schema, JsonSchema):
        return resource.schema.shape
    descriptor = resource.schema.descriptor
    return of_message(descriptor) if descriptor is not None else UNTYPED


_ZEROS: weakref.WeakKeyDictionary[Schema, Obj] = weakref.WeakKeyDictionary()


def zero(resource: Resource) -> Obj:
    """The kind's empty object as Go would print its zero value: what a create starts from.
    Shared: never change it."""
    schema = resource.schema
    known = _ZEROS.get(schema)
    if known is None:
        known = _ZEROS[schema] = schema.from_proto(b"") if schema.proto_message else {}
    return known


def ignored(resource: Resource, subresource: str, *objects: Any) -> FieldSet | None:
    """The fields a write through this endpoint resets, so no manager gains them there."""
    sub = resource.subresource(subresource) if subresource else None
    if sub is not None and sub.field_path:
        kept = {sub.field_path[0]} if sub.metadata_reset is None else {sub.field_path[0], "metadata"}
        names = {name for obj in objects if isinstance(obj, dict) for name in obj if name not in kept}
        metadata = sub.metadata_reset or ()
        return _fields(names, metadata) if names or metadata else None
    if resource.has_status:
        return _fields({"status"})
    return None


def _fields(names: set[str], metadata: tuple[str, ...] = ()) -> FieldSet:
    """The top-level fields `names` and the metadata fields `metadata`."""
    children = {("f", "metadata"): FieldSet({("f", name) for name in metadata})} if metadata else {}
    return FieldSet({("f", name) for name in names}, children)


def write_time(subresource: str) -> str | None:
    """The time a write records for its manager: now, except through /scale. kube's scale handler builds the
    parent's managedFields again with the times the parent's own entries held, and none is a /scale writer's,
    so an entry written through /scale has no time (and sorts before the timed ones)."""
    return None if subresource == "scale" else meta.now()


def stored_managers(obj: Obj | None) -> Managed:
    """The owners recorded in a stored object (none when they cannot be read)."""
    if obj is None:
        return {}
    try:
        return managers.decode(meta.meta(obj).get("managedFields"))
    except ValueError:
        return {}


def track_update(resource: Resource, subresource: str, old: Obj | None, new: Obj, manager: str) -> None:
    """Set new's managedFields for a create (old None) or update by `manager`: new is the object the
    client sent, defaulted, before the kind's strategy (prepare) runs."""
    m = meta.meta(new)
    sent = m.get("managedFields")
    managed: Managed = {}
    if not subresource and managers.is_reset(sent):
        managed = {}
    else:
        if sent and not subresource:
            try:
                managed = managers.decode(sent)
            except ValueError:
                managed = {}
        if not managed:
            managed = stored_managers(old)
    live = old if old is not None else zero(resource)
    owner = Owner.of(manager, managers.UPDATE, resource.api_version, subresource)
    if old is None and not managed:  # a create: what updater.update answers, in one walk
        fields = created.fields_v1(live, new, shape(resource), ignored(resource, subresource, live, new))
        _write_entries(new, [managers.entry(owner, resource.api_version, write_time(subresource), fields)]
                       if fields else [])
        return
    result = updater.update(live, new, shape(resource), managed, owner, resource.api_version,
                            ignored(resource, subresource, live, new), write_time(subresource))
    write(new, result)


def write(obj: Obj, managed: Managed) -> None:
    _write_entries(obj, managers.encode(managed))


def _write_entries(obj: Obj, entries: list[dict[str, Any]]) -> None:
    if entries:
        meta.meta(obj)["managedFields"] = entries
    else:
        meta.meta(obj).pop("managedFields", None)
