"""One kind's list and watch through the core, feeding a sink (kube's informer, without its cache).

start() lists before returning, so what the list held is in the sink when the caller goes on (the authorizer
answers from the first request). A background task then watches from the list's resourceVersion. A watch
that ends is opened again from the last revision seen; a 410 Expired (the revision was compacted away), an
ERROR event or any other failure lists again, and the sink takes that list as the whole truth (what is
missing from it was deleted meanwhile).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server import errors
from server.core import Core
from server.runtime.tasks import cancel_all

log = logging.getLogger(__name__)

RETRY_DELAY = 0.1  # seconds before listing or watching again after a failure


class Sink(Protocol):
    def replace(self, objs: list[dict[str, Any]]) -> None: ...

    def put(self, obj: dict[str, Any]) -> None: ...

    def remove(self, obj: dict[str, Any]) -> None: ...


class Informer:
    def __init__(self, core: Core, path: core_pb2.ResourcePath, sink: Sink) -> None:
        self._core = core
        self._path = path
        self._sink = sink
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        revision = await self._list()
        self._task = asyncio.get_running_loop().create_task(
            self._follow(revision), name=f"capstan-rbac-informer-{self._path.resource}")

    async def stop(self) -> None:
        await cancel_all((self._task,))

    async def _list(self) -> str:
        listed = await self._core.list(core_pb2.ListRequest(path=self._path))
        self._sink.replace([orjson.loads(item) for item in listed.items])
        return listed.metadata.resourceVersion

    async def _follow(self, revision: str) -> None:
        while True:
            try:
                if not revision:
                    revision = await self._list()
                revision = await self._watch(revision)
            except errors.ApiError as err:
                log.warning("RBAC %s watch ended (%s); listing again", self._path.resource, err.status.message)
                revision = ""
            except Exception:
                log.exception("RBAC %s informer failed; listing again", self._path.resource)
                revision = ""
            await asyncio.sleep(RETRY_DELAY)

    async def _watch(self, revision: str) -> str:
        """Follow the watch until it ends; the revision to watch from next ("" to list again)."""
        request = core_pb2.WatchRequest(path=self._path)
        request.options.resourceVersion = revision
        request.options.allowWatchBookmarks = True
        async for response in self._core.watch(request):
            for event in response.events:
                obj = orjson.loads(event.object.data)
                if event.type == "ERROR":
                    log.info("RBAC %s watch: %s; listing again", self._path.resource, obj.get("message"))
                    return ""
                revision = str((obj.get("metadata") or {}).get("resourceVersion") or revision)
                if event.type == "DELETED":
                    self._sink.remove(obj)
                elif event.type in ("ADDED", "MODIFIED"):
                    self._sink.put(obj)
        return revision
