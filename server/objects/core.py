"""The core: every verb of the CoreService as plain async methods over request/response messages.

The gRPC servicer (service.py) and the gateway's in-process transport call the
same methods with the same messages, so both paths share every rule. Failures
are raised as server.machinery.errors.ApiError carrying the Kubernetes Status.

Its verbs are the CoreService methods the method table says the Core runs (server/machinery/methods.py,
`Method.core`), each named by the table's python name and typed by its messages; the guard reaches them
through the table.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.objects import create, delete, deletecollection, get, health, list, patch, update, watch
from server.objects.context import Context
from server.objects.descriptors import Descriptors
from server.objects.watchcache import DISABLED, CacheConfig, WatchCaches
from server.registry import discovery
from server.registry.resources import Registry
from storage import Store


class Core:
    def __init__(self, store: Store, registry: Registry, *, watch_cache: CacheConfig = DISABLED) -> None:
        self.context = Context(store, registry, caches=WatchCaches(store, watch_cache))
        self.descriptors = Descriptors(store)  # protobuf messages of custom resources (server/objects/descriptors.py)
        # What /healthz, /livez and /readyz report (server/objects/health.py); start_core adds what it starts.
        self.health = health.HealthChecks()
        self.health.add("etcd", health.store_check(store))
        self.health.add("etcd-readiness", health.store_check(store))
        self.health.add("etcd-quota", health.quota_check(store))

    @property
    def caches(self) -> WatchCaches:
        assert self.context.caches is not None
        return self.context.caches

    async def close(self) -> None:
        """Stop what the core keeps running beside requests (the watch caches)."""
        await self.caches.close()

    @property
    def registry(self) -> Registry:
        return self.context.registry

    async def create(self, request: core_pb2.CreateRequest) -> core_pb2.CreateResponse:
        return await create.create(self.context, request)

    async def get(self, request: core_pb2.GetRequest) -> core_pb2.GetResponse:
        return await get.get(self.context, request)

    async def list(self, request: core_pb2.ListRequest) -> core_pb2.ListResponse:
        return await list.list_(self.context, request)

    async def update(self, request: core_pb2.UpdateRequest) -> core_pb2.UpdateResponse:
        return await update.update(self.context, request)

    async def patch(self, request: core_pb2.PatchRequest) -> core_pb2.PatchResponse:
        return await patch.patch(self.context, request)

    async def delete(self, request: core_pb2.DeleteRequest) -> core_pb2.DeleteResponse:
        return await delete.delete(self.context, request)

    async def delete_collection(
        self, request: core_pb2.DeleteCollectionRequest
    ) -> core_pb2.DeleteCollectionResponse:
        return await deletecollection.delete_collection(self.context, request)

    def watch(self, request: core_pb2.WatchRequest) -> AsyncIterator[core_pb2.WatchResponse]:
        return watch.watch(self.context, request)

    async def discover(self, request: core_pb2.DiscoverRequest) -> core_pb2.DiscoverResponse:
        return discovery.discover(self.context.registry, request.known_generation)

    async def register_descriptors(
        self, request: core_pb2.RegisterDescriptorsRequest
    ) -> core_pb2.RegisterDescriptorsResponse:
        messages = await self.descriptors.register(request.descriptors)
        return core_pb2.RegisterDescriptorsResponse(messages=messages)
