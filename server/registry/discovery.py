"""What the core serves, as data for discovery: one Resource message per registered resource.

The answer carries the registry's generation; a caller that already holds the current one gets just that
back (`unchanged`), so the gateway can check its discovery cache on every discovery request.
"""

from __future__ import annotations

import base64
import hashlib

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery.schema import JsonSchema
from server.registry import priorities
from server.registry.resources import Registry, Resource


def discover(registry: Registry, known_generation: int = 0) -> core_pb2.DiscoverResponse:
    if known_generation and known_generation == registry.generation:
        return core_pb2.DiscoverResponse(generation=registry.generation, unchanged=True)
    out = core_pb2.DiscoverResponse(generation=registry.generation)
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
            json_schema=r.schema.openapi if isinstance(r.schema, JsonSchema) else b"",
            deprecation_warning=r.deprecation_warning,
            no_table=r.answer_create is not None,
            storage_version_hash=storage_version_hash(r),
            group_priority=priorities.group_priority(r.group, r.version),
            returns_deleted_object=(r.strategy.returns_deleted_object if r.strategy.deleted_object_documented is None
                                    else r.strategy.deleted_object_documented),
        )
        for sub in r.subresources:
            entry.subresources.add(name=sub.name, kind=sub.kind, verbs=sub.verbs, group=sub.group, version=sub.version,
                                   proto_message=sub.proto_message)
        for column in r.strategy.columns:
            entry.columns.add(
                name=column.name, type=column.type, format=column.format,
                description=column.description, priority=column.priority,
            )
    for a in registry.aggregated.values():
        out.aggregated.add(group=a.group, version=a.version, group_priority_minimum=a.group_priority_minimum,
                           version_priority=a.version_priority, available=a.available, resources=a.resources,
                           openapi_v3=a.openapi_v3)
    return out


def storage_version_hash(r: Resource) -> str:
    """kube-apiserver's discovery.StorageVersionHash of the group version r's objects are stored at (its own
    unless storage_group_version names another); "" for a resource that stores nothing: one answered (the
    reviews), computed (componentstatuses) or only created through a handler (bindings)."""
    if r.answer_create is not None or r.computed is not None or (r.verbs == ("create",) and r.handlers.create):
        return ""
    group_version = r.storage_group_version or r.api_version
    group, _, version = group_version.rpartition("/")
    digest = hashlib.sha256(f"{group}/{version}/{r.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()
