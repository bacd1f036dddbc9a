"""What the core serves, as data for discovery: one Resource message per registered resource."""

from __future__ import annotations

from capstan.core.v1 import core_pb2
from server.registry import Registry


def discover(registry: Registry) -> core_pb2.DiscoverResponse:
    out = core_pb2.DiscoverResponse()
    for r in registry:
        entry = out.resources.add(
            group=r.group,
            version=r.version,
            resource=r.resource,
            kind=r.kind,
            singular=r.singular,
            list_kind=r.list_kind,
            namespaced=r.namespaced,
            verbs=r.verbs,
            short_names=r.short_names,
            categories=r.categories,
            proto_message=r.schema.proto_message,
            selectable_fields=r.selectable_fields(),
        )
        for sub in r.subresources:
            entry.subresources.add(name=sub.name, kind=sub.kind, verbs=sub.verbs)
        for column in r.columns:
            entry.columns.add(
                name=column.name, type=column.type, format=column.format,
                description=column.description, priority=column.priority,
            )
    return out
