"""What every handler needs: the core client and the resources the core serves."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from capstan.core.v1 import core_pb2
from gateway.client import CoreClient, CoreError, failure

REFRESH_AFTER_MISS = 1.0  # seconds: an unknown resource re-reads discovery at most this often


@dataclass
class Gateway:
    client: CoreClient
    server_address: str = "127.0.0.1:8080"
    _discovered: core_pb2.DiscoverResponse = field(default_factory=core_pb2.DiscoverResponse)
    _index: dict[tuple[str, str, str], core_pb2.Resource] = field(default_factory=dict)
    _fetched_at: float = 0.0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def discovered(self) -> core_pb2.DiscoverResponse:
        if not self._fetched_at:
            await self.refresh()
        return self._discovered

    async def refresh(self) -> None:
        async with self._lock:
            self._discovered = await self.client.discover(core_pb2.DiscoverRequest())
            self._index = {(r.group, r.version, r.resource): r for r in self._discovered.resources}
            self._fetched_at = time.monotonic()

    async def resource(self, group: str, version: str, resource: str) -> core_pb2.Resource:
        """The served resource, or 404 `the server could not find the requested resource`."""
        await self.discovered()
        found = self._index.get((group, version, resource))
        if found is None and time.monotonic() - self._fetched_at > REFRESH_AFTER_MISS:
            await self.refresh()
            found = self._index.get((group, version, resource))
        if found is None:
            raise CoreError(failure(404, "NotFound", "the server could not find the requested resource"))
        return found
