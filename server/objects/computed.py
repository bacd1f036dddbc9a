"""get and list of a resource whose objects are computed on every read (Resource.computed), not stored.

Such objects have no resourceVersion, and their list no revision or continue token (kube's componentstatus REST
answers a bare ComponentStatusList); selectors and the Table and PartialObjectMetadata views apply as to
stored objects. A name that is not among the objects answers the resource's `computed_missing` error (kube's
componentstatus REST: a plain 500), else the usual 404.
"""

from __future__ import annotations

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.machinery.meta import canonical
from server.machinery.values import Obj
from server.objects import render, views
from server.objects.context import Context
from server.objects.selection import selection
from server.registry import printing
from server.registry.resources import Resource


async def _objects(ctx: Context, resource: Resource) -> list[Obj]:
    assert resource.computed is not None
    objs = [canonical(resource.schema.normalize(obj)[0]) for obj in await resource.computed(ctx)]
    for obj in objs:  # typed ObjectMeta writes a zero creationTimestamp as null
        obj["metadata"].setdefault("creationTimestamp", None)
    return objs


async def get(ctx: Context, resource: Resource, req: core_pb2.GetRequest) -> core_pb2.GetResponse:
    name = req.path.name
    obj = next((o for o in await _objects(ctx, resource) if (o.get("metadata") or {}).get("name") == name), None)
    if obj is None:
        raise resource.computed_missing(name) if resource.computed_missing else errors.not_found(
            resource.resource, resource.group, name)
    view = req.view
    if view.view == core_pb2.VIEW_UNSPECIFIED:
        return core_pb2.GetResponse(object=render.raw_unstored(resource, obj, req.accept))
    include = views.check(view)
    version = view.api_version or printing.META_V1
    if view.view == core_pb2.VIEW_TABLE:
        doc = printing.object_table(resource, obj, "", include_object=include, api_version=version)
    elif view.view == core_pb2.VIEW_PARTIAL_OBJECT_METADATA:
        doc = printing.partial_object_metadata(obj, "", api_version=version)
    else:
        raise printing.partial_shape_error(resource, list_requested=True)
    return core_pb2.GetResponse(object=views.raw(doc))


async def list_(ctx: Context, resource: Resource, req: core_pb2.ListRequest) -> core_pb2.ListResponse:
    chosen = selection(resource, req.options.labelSelector, req.options.fieldSelector)
    objs = [o for o in await _objects(ctx, resource) if chosen.matches(o)]
    view = req.view
    if view.view != core_pb2.VIEW_UNSPECIFIED:
        include = views.check(view)
        version = view.api_version or printing.META_V1
        rows = [(o, "") for o in objs]
        if view.view == core_pb2.VIEW_TABLE:
            doc = printing.table(resource, rows, list_meta={}, include_object=include, api_version=version)
        elif view.view == core_pb2.VIEW_PARTIAL_OBJECT_METADATA_LIST:
            doc = printing.partial_object_metadata_list(rows, list_meta={}, api_version=version)
        else:
            raise printing.partial_shape_error(resource, list_requested=False)
        return core_pb2.ListResponse(converted=views.raw(doc), encoding=core_pb2.ENCODING_JSON,
                                     metadata=meta_pb2.ListMeta())
    encoding = render.encoding_for(resource, req.accept)
    if encoding == render.PROTOBUF:
        items = [resource.schema.to_proto(o) for o in objs]
    else:
        items = [render.go_json(o) for o in objs]
    return core_pb2.ListResponse(metadata=meta_pb2.ListMeta(), encoding=encoding, items=items,
                                 kind=resource.list_kind, api_version=resource.api_version)
