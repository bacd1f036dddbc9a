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

from capstan.core.v1 import core_pb2
from gateway.client import CoreError
from server.core import Core
from server.errors import ApiError, internal

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
    def __init__(self, core: Core) -> None:
        self._core = core

    async def create(self, request: core_pb2.CreateRequest) -> core_pb2.CreateResponse:
        return await _call(self._core.create(request))

    async def get(self, request: core_pb2.GetRequest) -> core_pb2.GetResponse:
        return await _call(self._core.get(request))

    async def list(self, request: core_pb2.ListRequest) -> core_pb2.ListResponse:
        return await _call(self._core.list(request))

    async def update(self, request: core_pb2.UpdateRequest) -> core_pb2.UpdateResponse:
        return await _call(self._core.update(request))

    async def patch(self, request: core_pb2.PatchRequest) -> core_pb2.PatchResponse:
        return await _call(self._core.patch(request))

    async def delete(self, request: core_pb2.DeleteRequest) -> core_pb2.DeleteResponse:
        return await _call(self._core.delete(request))

    async def delete_collection(
        self, request: core_pb2.DeleteCollectionRequest
    ) -> core_pb2.DeleteCollectionResponse:
        return await _call(self._core.delete_collection(request))

    async def discover(self, request: core_pb2.DiscoverRequest) -> core_pb2.DiscoverResponse:
        return await _call(self._core.discover(request))

    async def health(self) -> dict[str, bool]:
        return await self._core.health.run_all()

    async def watch(self, request: core_pb2.WatchRequest) -> AsyncIterator[core_pb2.WatchResponse]:
        stream = self._core.watch(request)
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
