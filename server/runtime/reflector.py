"""The one list-then-watch loop every cache in the server is kept by (client-go's Reflector over a ListerWatcher).

A Reflector lists its source, hands the list to its target as the whole truth (`replace`: what is missing
from it was deleted meanwhile), then watches from the list's revision, handing over each batch of events
(`apply`). A watch that ends is opened again from the last revision seen; one whose revision is gone
(Expired: 410, compacted, dropped as too slow) or that fails lists again, after RETRY_DELAY.

Two sources: CoreListWatch (one resource through the core's own verbs, JSON objects: what informers follow)
and StoreListWatch (every key under a prefix of the store, in revision order across all kinds: what the
garbage collector's graph follows, so an owner's deletion is never seen before a dependent created earlier).

    reflector = Reflector(CoreListWatch(core, path), target, name="capstan-informer-pods")
    await reflector.start()   # listed into target before returning
    reflector.launch()        # or: list in the background; synced() once the first list is in
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import orjson

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import errors
from server.objects.core import Core
from server.runtime.tasks import cancel_all
from storage import Compacted, Event, KeyValue, StorageError, Store, StoreClosed, WatcherTooSlow

log = logging.getLogger(__name__)

RETRY_DELAY = 0.1  # seconds before listing or watching again after a watch ended or failed
LIST_PAGE = 1000  # keys per read while listing the store

I = TypeVar("I")  # noqa: E741 - a listed item
E = TypeVar("E")  # a watch event
R = TypeVar("R")  # a revision
I_co = TypeVar("I_co", covariant=True)
E_co = TypeVar("E_co", covariant=True)
I_contra = TypeVar("I_contra", contravariant=True)
E_contra = TypeVar("E_contra", contravariant=True)
R_contra = TypeVar("R_contra", contravariant=True)

Obj = dict[str, Any]
WatchEvent = tuple[str, Obj]  # (ADDED, MODIFIED or DELETED; the object)


class Expired(Exception):
    """The watch cannot go on from its revision: list again."""


class Stopped(Exception):
    """The source is gone for good (its store closed): the reflector stops."""


class Source(Protocol[I_co, E_co, R]):
    async def snapshot(self) -> tuple[Sequence[I_co], R]:
        """Every item, and the revision they were read at (client-go's List)."""
        ...

    def watch(self, revision: R) -> AsyncGenerator[tuple[Sequence[E_co], R], None]:
        """Batches of events with the revision after each; ends when the watch ends."""
        ...


class Target(Protocol[I_contra, E_contra, R_contra]):
    def replace(self, items: Sequence[I_contra], revision: R_contra) -> None: ...

    def apply(self, events: Sequence[E_contra], revision: R_contra) -> None: ...


class Reflector(Generic[I, E, R]):
    def __init__(self, source: Source[I, E, R], target: Target[I, E, R], *, name: str) -> None:
        self._source = source
        self._target = target
        self.name = name
        self._task: asyncio.Task[None] | None = None
        self._synced = False

    async def start(self) -> None:
        """List into the target, then follow the watch in the background."""
        revision = await self._list()
        self._task = asyncio.get_running_loop().create_task(self._follow(revision), name=self.name)

    def launch(self) -> None:
        """List and follow in the background (synced() once the first list is in)."""
        self._task = asyncio.get_running_loop().create_task(self._follow(None), name=self.name)

    async def stop(self) -> None:
        await cancel_all((self._task,))
        self._task = None
        self._synced = False

    def synced(self) -> bool:
        """The first list is in the target (client-go's HasSynced)."""
        return self._synced

    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _list(self) -> R:
        items, revision = await self._source.snapshot()
        self._target.replace(items, revision)
        self._synced = True
        return revision

    async def _follow(self, revision: R | None) -> None:
        while True:
            try:
                if revision is None:
                    revision = await self._list()
                revision = await self._watch(revision)
            except Stopped:
                return
            except Expired as err:
                log.info("%s: %s; listing again", self.name, err)
                revision = None
            except (errors.ApiError, StorageError) as err:
                log.warning("%s: the list or watch failed (%s); listing again", self.name, err)
                revision = None
            except Exception:
                log.exception("%s failed; listing again", self.name)
                revision = None
            await asyncio.sleep(RETRY_DELAY)

    async def _watch(self, revision: R) -> R:
        """Follow the watch until it ends; the revision to watch from next."""
        async with contextlib.aclosing(self._source.watch(revision)) as batches:
            async for events, revision in batches:
                if events:
                    self._target.apply(events, revision)
        return revision


class CoreListWatch:
    """One resource (all namespaces, or the path's) through the core: objects as JSON, revisions as
    resourceVersions; an ERROR event or a 410 is Expired. A field selector (client-go's ListOptions tweak) keeps
    only the matching objects: the core filters them before they are rendered, so a controller that needs one
    object per namespace neither decodes nor caches the others."""

    def __init__(self, core: Core, path: core_pb2.ResourcePath, *, field_selector: str = "") -> None:
        self._core = core
        self.path = path
        self.field_selector = field_selector

    async def snapshot(self) -> tuple[list[Obj], str]:
        request = core_pb2.ListRequest(path=self.path)
        request.options.fieldSelector = self.field_selector
        listed = await self._core.list(request)
        return [orjson.loads(item) for item in listed.items], listed.metadata.resourceVersion

    async def watch(self, revision: str) -> AsyncGenerator[tuple[list[WatchEvent], str], None]:
        request = core_pb2.WatchRequest(path=self.path)
        request.options.fieldSelector = self.field_selector
        request.options.resourceVersion = revision
        request.options.allowWatchBookmarks = True
        try:
            async for response in self._core.watch(request):
                events: list[WatchEvent] = []
                for event in response.events:
                    obj = orjson.loads(event.object.data)
                    if event.type == "ERROR":
                        if events:
                            yield events, revision
                        raise Expired(f"watch of {self.path.resource}: {obj.get('message')}")
                    revision = str((obj.get("metadata") or {}).get("resourceVersion") or revision)
                    if event.type in ("ADDED", "MODIFIED", "DELETED"):
                        events.append((event.type, obj))
                yield events, revision
        except errors.ApiError as err:
            if err.code == 410:
                raise Expired(f"watch of {self.path.resource}: {err.status.message}") from None
            raise


class StoreListWatch(Generic[I]):
    """Every key under `prefix` in the store, listed in pages at one revision (each page's keys converted as it
    comes, those `convert` answers None for left out, so a list of the whole store never holds every value),
    then watched from it; a watch that ends (dropped as too slow, compacted, closed) is Expired; a closed store
    stops the reflector."""

    def __init__(self, store: Store, prefix: bytes, convert: Callable[[KeyValue], I | None]) -> None:
        self._store = store
        self._prefix = prefix
        self._convert = convert

    async def snapshot(self) -> tuple[list[I], int]:
        listed: list[I] = []
        try:
            page = await self._store.list(self._prefix, limit=LIST_PAGE)
            revision = page.revision
            while True:
                listed += [item for kv in page.kvs if (item := self._convert(kv)) is not None]
                if not page.more:
                    break
                page = await self._store.list(self._prefix, at_revision=revision, start_after=page.kvs[-1].key,
                                              limit=LIST_PAGE)
        except StoreClosed:
            raise Stopped from None
        return listed, revision

    async def watch(self, revision: int) -> AsyncGenerator[tuple[list[Event], int], None]:
        changes = self._store.watch(self._prefix, from_revision=revision)
        try:
            while True:
                try:
                    events = await changes.next_batch()
                except (WatcherTooSlow, Compacted) as err:
                    raise Expired(f"the watch ended ({err})") from None
                except StopAsyncIteration:
                    raise Expired("the watch ended") from None
                except StoreClosed:
                    raise Stopped from None
                yield list(events), events[-1].revision
        finally:
            changes.close()
