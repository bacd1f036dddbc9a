"""What exists from first start: the namespaces every Kubernetes cluster has, and the `kubernetes` Service.

kube-apiserver's bootstrap controller keeps a Service named `kubernetes` in `default`: cluster IP the first
address of the service range, port 443 ("https") to the apiserver's secure port, no selector (its Endpoints
name the apiservers; none are published here). Capstan creates it once, as kube does, and leaves it alone
afterwards; a deleted one comes back at the next start.
"""

from __future__ import annotations

import asyncio
import logging

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.machinery.concurrently import each
from server.objects.core import Core

log = logging.getLogger(__name__)

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
KUBERNETES_SERVICE_PORT = 443
KUBERNETES_TARGET_PORT = 6443  # kube-apiserver's default secure port


async def exists(core: Core, path: core_pb2.ResourcePath, name: str) -> bool:
    """Whether the object is stored. A start looks before it writes, as kube's bootstrap controllers do, so
    that a restart writes nothing and calls no admission webhook (one whose backend is down would refuse)."""
    named = core_pb2.ResourcePath()
    named.CopyFrom(path)
    named.name = name
    try:
        await core.get(core_pb2.GetRequest(path=named))
        return True
    except errors.ApiError as err:
        if err.code != 404:
            raise
        return False


async def _create(core: Core, path: core_pb2.ResourcePath, obj: dict[str, object], *, tolerate: int = 409) -> None:
    """Create obj unless it exists (or the create fails with `tolerate`, which is logged)."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and await exists(core, path, str(metadata.get("name") or "")):
        return
    try:
        await core.create(core_pb2.CreateRequest(
            path=path, object=core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(obj))))
    except errors.ApiError as err:
        if err.code not in (409, tolerate):
            raise
        if err.code != 409:
            log.warning("not created: %s", err)


async def ensure_default_namespaces(core: Core) -> None:
    await each(_create(core, core_pb2.ResourcePath(version="v1", resource="namespaces"),
                       {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
               for name in DEFAULT_NAMESPACES)


async def ensure_kubernetes_service(core: Core, cluster_ip: str, target_port: int = KUBERNETES_TARGET_PORT) -> None:
    """The `kubernetes` Service in `default`, at `cluster_ip` (the first address of the service range), its port 443
    sent to `target_port` (the server's secure port). A stored one keeps its address; its ports are set back to
    these when they differ, as kube's bootstrap controller reconciles them."""
    ports = [{"name": "https", "protocol": "TCP", "port": KUBERNETES_SERVICE_PORT, "targetPort": target_port}]
    service: dict[str, object] = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"clusterIP": cluster_ip, "sessionAffinity": "None", "type": "ClusterIP", "ports": ports},
    }
    path = core_pb2.ResourcePath(version="v1", resource="services", namespace="default")
    named = core_pb2.ResourcePath(version="v1", resource="services", namespace="default", name="kubernetes")
    try:  # looked up first, as kube's bootstrap controller does: at a restart its own address is taken by itself
        got = await core.get(core_pb2.GetRequest(path=named))
    except errors.ApiError as err:
        if err.code != 404:
            raise
    else:
        stored = orjson.loads(got.object.data)
        spec = stored.get("spec") or {}
        if [{key: p.get(key) for key in ports[0]} for p in spec.get("ports") or []] != ports:
            spec["ports"] = ports
            await core.update(core_pb2.UpdateRequest(path=named, object=core_pb2.RawObject(
                encoding=core_pb2.ENCODING_JSON, data=orjson.dumps(stored))))
        return
    # 422 when another Service holds that address (the range changed since): that one stays. The create runs
    # in a task of its own: the allocator reserves the address for as long as the creating task runs.
    await asyncio.create_task(_create(core, path, service, tolerate=422))
