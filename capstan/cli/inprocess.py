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
from collections.abc import AsyncIterator
from typing import Any

from gateway.client import CoreClient, CoreError
from server.auth.guard import GuardedCore
from server.machinery.credentials import Credentials
from server.machinery.errors import ApiError, internal
from server.machinery.methods import Method

log = logging.getLogger(__name__)


class InProcessClient(CoreClient):
    """Calls the guarded core with the credentials of the request it serves (`as_caller`); the client without
    credentials is the gateway itself (its discovery lookups), whose calls are answered without the chain: in
    one process the gateway is part of the server, as kube-apiserver's own handlers are."""

    def __init__(self, guard: GuardedCore, credentials: Credentials | None = None) -> None:
        self._guard = guard
        self._credentials = credentials

    def as_caller(self, credentials: Credentials) -> InProcessClient:
        return InProcessClient(self._guard, credentials)

    async def unary(self, method: Method, request: Any) -> Any:
        try:
            if self._credentials is None:
                return await self._guard.answer(method, request)
            return await self._guard.unary(method, request, self._credentials)
        except ApiError as err:
            raise CoreError(err.status) from None
        except Exception as err:  # the same answer the gRPC servicer gives: a 500 Status, logged here
            log.exception("core call failed")
            raise CoreError(internal(str(err)).status) from None

    async def health(self) -> dict[str, bool]:
        return await self._guard.core.health.run_all()

    async def stream(self, method: Method, request: Any) -> AsyncIterator[Any]:
        if self._credentials is None:
            stream = self._guard.answer_stream(method, request)
        else:
            try:
                stream = await self._guard.stream(method, request, self._credentials)
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
