"""The store with a span around each read and write, for a core that traces (server/machinery/tracing.py).

Installed by start_core only when tracing is configured, so an untraced core calls its store directly. Spans are
named by the call ("Store.Get", "Store.List", ...) and carry the key or prefix, as kube's etcd client spans
carry the etcd method; watches are not spans (they outlive the request that opened them).
"""

from __future__ import annotations

from typing import Any

from server.machinery import tracing
from storage import CountResult, GetResult, KeyValue, ListResult, Store, Watch, WriteResult


class TracedStore:
    """A Store whose calls are spans; everything else is the wrapped store's."""

    def __init__(self, store: Store) -> None:
        self.inner = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def create(self, key: bytes, value: bytes) -> WriteResult:
        with tracing.span("Store.Create", {"key": key.decode(errors="replace")}):
            return await self.inner.create(key, value)

    async def get(self, key: bytes, *, at_revision: int | None = None) -> GetResult:
        with tracing.span("Store.Get", {"key": key.decode(errors="replace")}):
            return await self.inner.get(key, at_revision=at_revision)

    def recent(self, key: bytes) -> KeyValue | None:
        return self.inner.recent(key)

    async def list(self, prefix: bytes, *, at_revision: int | None = None, start_after: bytes | None = None,
                   limit: int | None = None, counted: bool = True, values: bool = True) -> ListResult:
        with tracing.span("Store.List", {"prefix": prefix.decode(errors="replace"), "limit": limit or 0}):
            return await self.inner.list(prefix, at_revision=at_revision, start_after=start_after, limit=limit,
                                         counted=counted, values=values)

    async def count(self, prefix: bytes, *, at_revision: int | None = None) -> CountResult:
        with tracing.span("Store.Count", {"prefix": prefix.decode(errors="replace")}):
            return await self.inner.count(prefix, at_revision=at_revision)

    async def update(self, key: bytes, value: bytes, *, expected_mod_revision: int | None = None) -> WriteResult:
        with tracing.span("Store.Update", {"key": key.decode(errors="replace")}):
            return await self.inner.update(key, value, expected_mod_revision=expected_mod_revision)

    async def delete(self, key: bytes, *, expected_mod_revision: int | None = None) -> WriteResult:
        with tracing.span("Store.Delete", {"key": key.decode(errors="replace")}):
            return await self.inner.delete(key, expected_mod_revision=expected_mod_revision)

    def watch(self, prefix: bytes, *, from_revision: int) -> Watch:
        return self.inner.watch(prefix, from_revision=from_revision)

    async def compact(self, revision: int) -> int:
        return await self.inner.compact(revision)

    def current_revision(self) -> int:
        return self.inner.current_revision()

    def compacted_revision(self) -> int:
        return self.inner.compacted_revision()

    def size_bytes(self) -> int:
        return self.inner.size_bytes()

    def quota_bytes(self) -> int | None:
        return self.inner.quota_bytes()

    async def close(self) -> None:
        await self.inner.close()
