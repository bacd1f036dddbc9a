"""The core: every verb of the CoreService as plain async methods over request/response messages.

The gRPC servicer (service.py) and the gateway's in-process transport call the
same methods with the same messages, so both paths share every rule. Failures
are raised as server.machinery.errors.ApiError carrying the Kubernetes Status.

Its verbs are the CoreService methods the method table says the Core runs (server/machinery/methods.py,
`Method.core`), each named by the table's python name and typed by its messages; the guard reaches them
through the table.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.objects import create, delete, deletecollection, get, health, list, patch, update, views, watch
from server.objects.context import Context
from server.objects.descriptors import Descriptors
from server.objects.resolve import resolve
from server.objects.watchcache import DISABLED, CacheConfig, WatchCaches
from server.registry import discovery
from server.registry.resources import Registry
from storage import Store

Written = TypeVar("Written", core_pb2.CreateRequest, core_pb2.UpdateRequest, core_pb2.PatchRequest)
Answer = TypeVar("Answer", core_pb2.CreateResponse, core_pb2.UpdateResponse, core_pb2.PatchResponse)


class Core:
    def __init__(self, store: Store, registry: Registry, *, watch_cache: CacheConfig = DISABLED,
                 watch_list: bool = False) -> None:
        self.context = Context(store, registry, caches=WatchCaches(store, watch_cache), watch_list=watch_list)
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
        return await self._viewed(request, create.create)

    async def get(self, request: core_pb2.GetRequest) -> core_pb2.GetResponse:
        return await get.get(self.context, request)

    async def list(self, request: core_pb2.ListRequest) -> core_pb2.ListResponse:
        return await list.list_(self.context, request)

    async def update(self, request: core_pb2.UpdateRequest) -> core_pb2.UpdateResponse:
        return await self._viewed(request, update.update)

    async def patch(self, request: core_pb2.PatchRequest) -> core_pb2.PatchResponse:
        return await self._viewed(request, patch.patch)

    async def delete(self, request: core_pb2.DeleteRequest) -> core_pb2.DeleteResponse:
        made = views.plain(request)
        if made is None:
            return await delete.delete(self.context, request)
        deleted = await delete.delete(self.context, made)
        if deleted.HasField("object"):
            deleted.object.CopyFrom(self._answer(request, deleted.object))
        return deleted

    async def delete_collection(
        self, request: core_pb2.DeleteCollectionRequest
    ) -> core_pb2.DeleteCollectionResponse:
        made = views.plain(request)
        if made is None:
            return await deletecollection.delete_collection(self.context, request)
        deleted = await deletecollection.delete_collection(self.context, made)
        resource = resolve(self.context.registry, request.path, "deletecollection")
        converted = views.answer_list(resource, request.view, deleted.deleted)
        return core_pb2.DeleteCollectionResponse(deleted=core_pb2.ListResponse(
            converted=converted, encoding=converted.encoding, metadata=deleted.deleted.metadata))

    async def _viewed(self, request: Written, write: Callable[[Context, Written], Awaitable[Answer]]) -> Answer:
        """A create, update or patch; with a view, made asking JSON and its answer converted (views.answer)."""
        made = views.plain(request)
        if made is None:
            return await write(self.context, request)
        answered = await write(self.context, made)
        answered.object.CopyFrom(self._answer(request, answered.object))
        return answered

    def _answer(self, request: core_pb2.CreateRequest | core_pb2.UpdateRequest | core_pb2.PatchRequest
                | core_pb2.DeleteRequest, answered: core_pb2.RawObject) -> core_pb2.RawObject:
        """A write's answer converted as its request's view asks (views.answer), the write made."""
        resource = self.context.registry.get(request.path.group, request.path.version, request.path.resource)
        if resource is None:  # its CRD deleted since the write: the object's own columns are gone with it
            raise errors.resource_not_found()
        return views.answer(resource, request.view, answered)

    def watch(self, request: core_pb2.WatchRequest) -> AsyncIterator[core_pb2.WatchResponse]:
        return watch.watch(self.context, request)

    async def discover(self, request: core_pb2.DiscoverRequest) -> core_pb2.DiscoverResponse:
        return discovery.discover(self.context.registry, request.known_generation)

    async def register_descriptors(
        self, request: core_pb2.RegisterDescriptorsRequest
    ) -> core_pb2.RegisterDescriptorsResponse:
        messages = await self.descriptors.register(request.descriptors)
        return core_pb2.RegisterDescriptorsResponse(messages=messages)
