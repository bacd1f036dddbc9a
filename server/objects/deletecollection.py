"""DeleteCollection: delete every object a list selects, answering the list of what was deleted."""

from __future__ import annotations

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_pb2
from server import errors
from server.objects import options, render
from server.objects.context import Context
from server.objects.delete import delete_object
from server.objects.list import read_page
from server.objects.resolve import resolve


async def delete_collection(ctx: Context, req: core_pb2.DeleteCollectionRequest) -> core_pb2.DeleteCollectionResponse:
    resource = resolve(ctx.registry, req.path, "deletecollection")
    dry_run, _policy = options.delete_options(req.delete_options)
    page = await read_page(ctx, resource, req.path.namespace, req.list_options)
    encoding = render.encoding_for(resource, req.accept)
    items: list[bytes] = []
    for kv in page.kvs:
        obj = render.load(kv.value)
        meta = obj["metadata"]
        try:
            answer = await delete_object(
                ctx, resource, meta.get("namespace", ""), meta["name"], req.delete_options, dry_run, encoding
            )
        except errors.ApiError as err:
            if err.code == 404:  # deleted meanwhile: nothing left to do
                continue
            raise
        if answer.HasField("object"):
            items.append(answer.object.data)
        else:
            items.append(render.item_bytes(resource, kv.value, str(kv.mod_revision), encoding, True))
    deleted = core_pb2.ListResponse(
        metadata=meta_pb2.ListMeta(resourceVersion=str(page.revision)),
        encoding=encoding,
        items=items,
        kind=resource.list_kind,
        api_version=resource.api_version,
    )
    return core_pb2.DeleteCollectionResponse(deleted=deleted)
