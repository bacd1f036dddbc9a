"""Get: one object, at the latest revision or not older than a given one.

As kube-apiserver 1.28's cacher: an unset resourceVersion reads the store (a consistent read); "0" and N
read the watch cache when it is ready (watchcache.py), N once the cache has reached it.
"""

from __future__ import annotations

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.objects import computed, conversion, options, render, views
from server.objects.context import Context, reach
from server.objects.resolve import resolve
from server.objects.storeerrors import store_call
from server.registry.resources import Resource
from storage import KeyValue

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
    handlers = resource.handlers_of(req.path.subresource)
    if req.connect_verb and handlers.connect is None:
        raise errors.method_not_allowed()  # only a connecter answers other methods than GET
    if handlers.connect is not None:  # a getter or connecter answered from data, not read from the store (pods/log)
        return await handlers.connect(ctx, resource, req)
    if handlers.get is not None:  # the subresource's own view of the object (/scale)
        return await handlers.get(ctx, resource, req)
    if resource.computed is not None:
        return await computed.get(ctx, resource, req)
    kv = (await conversion.kvs(resource, [await read(ctx, resource, req)]))[0]
    if req.view.view != core_pb2.VIEW_UNSPECIFIED:
        return core_pb2.GetResponse(object=views.one(resource, req.view, kv))
    response = core_pb2.GetResponse()
    render.raw_into(response.object, resource, kv.value, str(kv.mod_revision), req.accept)
    return response


async def read(ctx: Context, resource: Resource, req: core_pb2.GetRequest) -> KeyValue:
    """The stored key a get names, at a revision not older than the one asked for; 404 when there is none."""
    rv = req.options.resourceVersion
    key = resource.key(req.path.namespace, req.path.name)
    wanted = options.resource_version(rv) if rv not in ("", "0") else 0
    kv: KeyValue | None
    caches = ctx.caches
    cache = None
    if rv and caches is not None and caches.enabled:
        cache = await store_call(caches.fresh(resource.key_prefix(), wanted))
    if cache is not None:
        kv = cache.get(key)
    else:
        if wanted:
            await reach(ctx, wanted)
        kv = (await store_call(ctx.store.get(key))).kv
    if kv is None:
        raise errors.not_found(resource.resource, resource.group, req.path.name)
    return kv
