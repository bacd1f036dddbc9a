"""The namespace rules every namespaced write obeys (kube-apiserver's NamespaceLifecycle admission)."""

from __future__ import annotations

from server.machinery import errors, meta
from server.machinery.values import Obj
from server.objects import render
from server.objects.context import Context
from server.objects.storeerrors import store_call
from server.registry.resources import Resource


async def require_active_namespace(ctx: Context, resource: Resource, obj: Obj) -> None:
    """404 when the object's namespace does not exist, 403 while it is being terminated."""
    m = meta.meta(obj)
    namespace = m["namespace"]
    if ctx.namespaces.known_active(namespace):
        return
    got = await store_call(ctx.store.get(ctx.namespace_key(namespace)))
    if got.kv is None:
        raise errors.not_found("namespaces", "", namespace)
    ns = render.load(got.kv.value)
    if is_terminating(ns):
        raise errors.forbidden(
            resource.resource,
            resource.group,
            m.get("name") or m.get("generateName", ""),
            f"unable to create new content in namespace {namespace} because it is being terminated",
            [errors.Cause("NamespaceTerminating", f"namespace {namespace} is being terminated", "metadata.namespace")],
        )


def is_terminating(ns: Obj) -> bool:
    return bool(meta.meta(ns).get("deletionTimestamp")) or (ns.get("status") or {}).get("phase") == "Terminating"
