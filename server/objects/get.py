"""Get: one object, at the latest revision or not older than a given one."""

from __future__ import annotations

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.objects import computed, options, render, scale, views
from server.objects.context import Context, reach
from server.objects.resolve import resolve
from server.objects.storeerrors import store_call

# The verbs a connecter's request is made with besides get (GetRequest.connect_verb): its HTTP method's.
CONNECT_VERBS = frozenset({"", "create", "update", "patch", "delete"})


async def get(ctx: Context, req: core_pb2.GetRequest) -> core_pb2.GetResponse:
    """resourceVersion unset: the latest (a consistent read); "0": any, so the latest too;
    N: not older than N — after waiting for N to arrive, else 504 Too large resource version.
    """
    if req.connect_verb not in CONNECT_VERBS:
        raise errors.bad_request(f'connect_verb: Unsupported value: "{req.connect_verb}": supported values: '
                                 + ", ".join(f'"{v}"' for v in sorted(CONNECT_VERBS - {""})))
    resource = resolve(ctx.registry, req.path, req.connect_verb or "get")
    hook = resource.subresource_get.get(req.path.subresource) if req.path.subresource else None
    if req.connect_verb and hook is None:
        raise errors.method_not_allowed()  # only a connecter answers other methods than GET
    if hook is not None:  # a getter or connecter answered from data, not read from the store (pods/log)
        return await hook(ctx, resource, req)  # type: ignore[no-any-return]
    if resource.computed is not None:
        return await computed.get(ctx, resource, req)
    key = resource.key(req.path.namespace, req.path.name)
    rv = req.options.resourceVersion
    if rv not in ("", "0"):
        await reach(ctx, options.resource_version(rv))
    got = await store_call(ctx.store.get(key))
    if got.kv is None:
        raise errors.not_found(resource.resource, resource.group, req.path.name)
    if scale.serves(resource, req.path):
        return core_pb2.GetResponse(object=scale.read(resource, got.kv.value, got.kv.mod_revision, req))
    if req.view.view != core_pb2.VIEW_UNSPECIFIED:
        return core_pb2.GetResponse(object=views.one(resource, req.view, got.kv))
    return core_pb2.GetResponse(object=render.raw(resource, got.kv.value, str(got.kv.mod_revision), req.accept))
