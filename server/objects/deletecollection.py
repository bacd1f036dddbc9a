"""DeleteCollection: delete every object a list selects, answering the list of what was deleted."""

from __future__ import annotations

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.objects import conversion, options, render
from server.objects.context import Context
from server.objects.delete import delete_object
from server.objects.list import read_page
from server.objects.resolve import resolve
from server.registry.resources import Resource


async def delete_collection(ctx: Context, req: core_pb2.DeleteCollectionRequest) -> core_pb2.DeleteCollectionResponse:
    resource = resolve(ctx.registry, req.path, "deletecollection")
    dry_run, _policy = options.delete_options(req.delete_options)
    page = await read_page(ctx, resource, req.path.namespace, req.list_options)
    converted = await conversion.kvs(resource, page.kvs)
    encoding = render.encoding_for(resource, req.accept)
    typed = not resource.schema.proto_message  # list items carry kind/apiVersion only for JSON-only kinds
    items: list[bytes] = []
    for kv in converted:
        obj = render.load(kv.value)
        meta = obj["metadata"]
        try:
            answer = await delete_object(
                ctx, resource, meta.get("namespace", ""), meta["name"], req.delete_options, dry_run, encoding,
                answer_deleted=False,  # Store.DeleteCollection lists what it read, whatever the kind's Delete answers
            )
        except errors.ApiError as err:
            if err.code == 404:  # deleted meanwhile: nothing left to do
                continue
            raise
        if answer.HasField("object"):
            items.append(_as_item(resource, answer.object))
        else:
            items.append(render.item_bytes(resource, kv.value, str(kv.mod_revision), encoding, typed))
    deleted = core_pb2.ListResponse(
        metadata=meta_pb2.ListMeta(resourceVersion=str(page.revision)),
        encoding=encoding,
        items=items,
        kind=resource.list_kind,
        api_version=resource.api_version,
    )
    return core_pb2.DeleteCollectionResponse(deleted=deleted)


def _as_item(resource: Resource, raw: core_pb2.RawObject) -> bytes:
    """A delete's answer (the object, marked or deleted) as an item of a typed list, like LIST's items."""
    prefix = b"{" + render.type_prefix(resource)
    if raw.encoding == core_pb2.ENCODING_JSON and resource.schema.proto_message and raw.data.startswith(prefix):
        return b"{" + raw.data[len(prefix):]
    return raw.data
