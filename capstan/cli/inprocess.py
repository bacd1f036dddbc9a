"""In-process transport of the gateway's CoreClient: the same request messages handed to the same Core.

It lives here, in the composition root, rather than in gateway/: it is the one
place that holds both layers, so the gateway itself never imports the core's
storage (import-linter checks that).

This is how `capstan serve` runs: a Python gRPC hop costs ~0.5 ms of CPU per
call, more than the rest of a request. Errors cross as the same Status they
would carry on the wire.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway.client import CoreError
from server.auth.guard import GuardedCore
from server.machinery.credentials import Credentials
from server.machinery.errors import ApiError, internal

log = logging.getLogger(__name__)

T = TypeVar("T")


async def _call(awaitable: Awaitable[T]) -> T:
    try:
        return await awaitable
    except ApiError as err:
        raise CoreError(err.status) from None
    except Exception as err:  # the same answer the gRPC servicer gives: a 500 Status, logged here
        log.exception("core call failed")
        raise CoreError(internal(str(err)).status) from None


class InProcessClient:
    """Calls the guarded core with the credentials of the request it serves (`as_caller`); the client without
    credentials is the gateway itself (its discovery lookups), which calls the core directly: in one process
    the gateway is part of the server, as kube-apiserver's own handlers are."""

    def __init__(self, guard: GuardedCore, credentials: Credentials | None = None) -> None:
        self._guard = guard
        self._credentials = credentials

    def as_caller(self, credentials: Credentials) -> InProcessClient:
        return InProcessClient(self._guard, credentials)

    async def create(self, request: core_pb2.CreateRequest) -> core_pb2.CreateResponse:
        if self._credentials is None:
            return await _call(self._guard.core.create(request))
        return await _call(self._guard.create(request, self._credentials))

    async def get(self, request: core_pb2.GetRequest) -> core_pb2.GetResponse:
        if self._credentials is None:
            return await _call(self._guard.core.get(request))
        return await _call(self._guard.get(request, self._credentials))

    async def list(self, request: core_pb2.ListRequest) -> core_pb2.ListResponse:
        if self._credentials is None:
            return await _call(self._guard.core.list(request))
        return await _call(self._guard.list(request, self._credentials))

    async def update(self, request: core_pb2.UpdateRequest) -> core_pb2.UpdateResponse:
        if self._credentials is None:
            return await _call(self._guard.core.update(request))
        return await _call(self._guard.update(request, self._credentials))

    async def patch(self, request: core_pb2.PatchRequest) -> core_pb2.PatchResponse:
        if self._credentials is None:
            return await _call(self._guard.core.patch(request))
        return await _call(self._guard.patch(request, self._credentials))

    async def delete(self, request: core_pb2.DeleteRequest) -> core_pb2.DeleteResponse:
        if self._credentials is None:
            return await _call(self._guard.core.delete(request))
        return await _call(self._guard.delete(request, self._credentials))

    async def delete_collection(
        self, request: core_pb2.DeleteCollectionRequest
    ) -> core_pb2.DeleteCollectionResponse:
        if self._credentials is None:
            return await _call(self._guard.core.delete_collection(request))
        return await _call(self._guard.delete_collection(request, self._credentials))

    async def discover(self, request: core_pb2.DiscoverRequest) -> core_pb2.DiscoverResponse:
        if self._credentials is None:
            return await _call(self._guard.core.discover(request))
        return await _call(self._guard.discover(request, self._credentials))

    async def access(self, request: core_pb2.AccessRequest) -> core_pb2.AccessResponse:
        if self._credentials is None:
            return core_pb2.AccessResponse()
        return await _call(self._guard.access(request, self._credentials))

    async def issuer_document(self, request: core_pb2.IssuerDocumentRequest) -> core_pb2.IssuerDocumentResponse:
        return await _call(self._guard.issuer_document(request, self._credentials or Credentials()))

    async def health(self) -> dict[str, bool]:
        return await self._guard.core.health.run_all()

    async def watch(self, request: core_pb2.WatchRequest) -> AsyncIterator[core_pb2.WatchResponse]:
        if self._credentials is None:
            stream = self._guard.core.watch(request)
        else:
            try:
                stream = await self._guard.watch(request, self._credentials)
            except ApiError as err:
                raise CoreError(err.status) from None
        try:
            while True:
                try:
                    response = await stream.__anext__()
                except StopAsyncIteration:
                    return
                except ApiError as err:
                    raise CoreError(err.status) from None
                yield response
        finally:
            await stream.aclose()  # type: ignore[attr-defined]

    async def close(self) -> None:
        return None
