"""Shared informers with indexes, as client-go's tools/cache SharedIndexInformer: one resource listed and watched
through the core (server/runtime/reflector.py) into an indexed cache, every change handed to the handlers
registered on it.

- The cache holds each object by (namespace, name) ("" for a cluster-scoped one), as `transform` makes it
  (client-go's SetTransform: a cache of identities need not hold whole Pods); indexes map a value to the keys
  whose object the index function gives that value; the namespace index is always there.
- Handlers are client-go's ResourceEventHandler: on_add(obj, initial) (initial: part of the list start()
  awaits), on_update(old, new), on_delete(obj) (the object as its DELETED event carries it). They run inline,
  in event order, after the cache has changed; what one raises is logged, never stops the informer. A relist
  (after a 410 Expired, compaction or a failed watch) is delivered as the changes it makes: on_update for every
  listed object already cached (client-go's Replaced deltas), on_add for new ones, on_delete for cached objects
  the list no longer holds. Every `resync` seconds (0: never) on_update(obj, obj) for every cached object.
  Handlers added to a started informer get on_add(obj, True) for what the cache holds.
- start() lists before returning, so what the list held is in the cache and handed to the handlers when the
  caller goes on (the RBAC authorizer answers from the first request). Started by several users (shared
  through SharedInformers), it runs until the last one stops it; stopped, its cache is emptied (a new start
  lists again, every object then an initial add).

    pods = informers.informer(PODS)
    pods.add_handlers(Handlers(on_add=..., on_update=..., on_delete=...))
    await pods.start()
    pods.cache.in_namespace("team")
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from capstan.core.v1 import core_service_pb2 as core_pb2
from server.objects.core import Core
from server.runtime.reflector import CoreListWatch, Reflector, WatchEvent
from server.runtime.tasks import cancel_all

log = logging.getLogger(__name__)

T = TypeVar("T")
Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name)
IndexFunc = Callable[[T], Iterable[str]]
NAMESPACE_INDEX = "namespace"


def key_of(obj: Obj) -> Key:
    """client-go's MetaNamespaceKeyFunc, as a pair."""
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def resource_version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


@dataclass(frozen=True, slots=True, eq=False)
class Handlers(Generic[T]):
    """client-go's ResourceEventHandlerFuncs: any of the three may be left out. Registered and removed by
    identity."""

    on_add: Callable[[T, bool], None] | None = None
    on_update: Callable[[T, T], None] | None = None
    on_delete: Callable[[T], None] | None = None


def on_change(changed: Callable[[T | None, T | None], None]) -> Handlers[T]:
    """Handlers calling changed(old, new) for every change, None for the side that does not exist."""
    return Handlers(lambda obj, _: changed(None, obj), changed, lambda obj: changed(obj, None))


class Indexer(Generic[T]):
    """client-go's Indexer: objects by key, and for each index the keys by indexed value (in insertion order)."""

    def __init__(self, indexers: Mapping[str, IndexFunc[T]]) -> None:
        self._items: dict[Key, T] = {}
        self._indexers = dict(indexers)
        self._indices: dict[str, dict[str, dict[Key, None]]] = {NAMESPACE_INDEX: {}, **{n: {} for n in indexers}}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Key) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[Key]:
        return iter(self._items)

    def get(self, key: Key) -> T | None:
        return self._items.get(key)

    def items(self) -> list[tuple[Key, T]]:
        return list(self._items.items())

    def values(self) -> list[T]:
        return list(self._items.values())

    def by_index(self, index: str, value: str) -> list[T]:
        """The objects whose index function gave `value` (KeyError for an index not defined)."""
        return [self._items[key] for key in self._indices[index].get(value, ())]

    def in_namespace(self, namespace: str) -> list[T]:
        return self.by_index(NAMESPACE_INDEX, namespace)

    def put(self, key: Key, obj: T) -> T | None:
        """Store obj under key; the object it replaced."""
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = obj
        self._index(key, obj)
        return old

    def pop(self, key: Key) -> T | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def clear(self) -> None:
        self._items.clear()
        for index in self._indices.values():
            index.clear()

    def _values(self, index: str, key: Key, obj: T) -> Iterable[str]:
        return (key[0],) if index == NAMESPACE_INDEX else self._indexers[index](obj)

    def _index(self, key: Key, obj: T) -> None:
        for name, index in self._indices.items():
            for value in self._values(name, key, obj):
                index.setdefault(value, {})[key] = None

    def _unindex(self, key: Key, obj: T) -> None:
        for name, index in self._indices.items():
            for value in self._values(name, key, obj):
                keys = index.get(value)
                if keys is not None:
                    keys.pop(key, None)
                    if not keys:
                        del index[value]


def _same(obj: Obj) -> Obj:
    return obj


class Informer(Generic[T]):
    """`source` is what is listed and watched: the path through the core unless given (client-go's
    ListerWatcher)."""

    @overload
    def __init__(self: Informer[Obj], core: Core, path: core_pb2.ResourcePath, *,
                 indexers: Mapping[str, IndexFunc[Obj]] | None = None, resync: float = 0.0,
                 source: CoreListWatch | None = None) -> None: ...

    @overload
    def __init__(self, core: Core, path: core_pb2.ResourcePath, *, transform: Callable[[Obj], T],
                 indexers: Mapping[str, IndexFunc[T]] | None = None, resync: float = 0.0,
                 source: CoreListWatch | None = None) -> None: ...

    def __init__(self, core: Core, path: core_pb2.ResourcePath, *, transform: Callable[[Obj], Any] = _same,
                 indexers: Mapping[str, IndexFunc[Any]] | None = None, resync: float = 0.0,
                 source: CoreListWatch | None = None) -> None:
        self.path = path
        self.cache: Indexer[T] = Indexer(indexers or {})
        self._transform: Callable[[Obj], T] = transform
        self._resync = resync
        self._reflector = Reflector(source or CoreListWatch(core, path), self,
                                    name=f"capstan-informer-{path.resource}")
        self._handlers: list[Handlers[T]] = []
        self._users = 0
        self._initial = False  # handing over the list start() awaits
        self._resync_task: asyncio.Task[None] | None = None

    def add_handlers(self, handlers: Handlers[T]) -> Handlers[T]:
        """Register handlers; on a started informer they get on_add(obj, True) for what the cache holds now."""
        self._handlers.append(handlers)
        if self._reflector.synced() and handlers.on_add is not None:
            for obj in self.cache.values():
                self._call(handlers.on_add, obj, True)
        return handlers

    def remove_handlers(self, handlers: Handlers[T]) -> None:
        if handlers in self._handlers:
            self._handlers.remove(handlers)

    async def start(self) -> None:
        """The first user's start lists into the cache before returning; later users' return at once."""
        self._users += 1
        if self._users > 1:
            return
        self._initial = True
        try:
            await self._reflector.start()
        except BaseException:
            self._users -= 1
            self.cache.clear()
            raise
        finally:
            self._initial = False
        if self._resync > 0:
            self._resync_task = asyncio.get_running_loop().create_task(
                self._resync_every(), name=f"capstan-informer-resync-{self.path.resource}")

    async def stop(self) -> None:
        """The last user's stop stops following and empties the cache."""
        self._users = max(0, self._users - 1)
        if self._users:
            return
        await self._reflector.stop()
        await cancel_all((self._resync_task,))
        self._resync_task = None
        self.cache.clear()

    def synced(self) -> bool:
        return self._reflector.synced()

    def running(self) -> bool:
        return self._reflector.running()

    # The reflector's target.

    def replace(self, objs: Sequence[Obj], revision: str) -> None:
        fresh = {key_of(obj): self._transform(obj) for obj in objs}
        for key in [key for key in self.cache if key not in fresh]:
            old = self.cache.pop(key)
            if old is not None:
                self._deleted(old)
        for key, new in fresh.items():
            self._put(key, new, initial=self._initial)

    def apply(self, events: Sequence[WatchEvent], revision: str) -> None:
        for kind, obj in events:
            key = key_of(obj)
            value = self._transform(obj)
            if kind == "DELETED":
                self.cache.pop(key)
                self._deleted(value)
            else:
                self._put(key, value, initial=False)

    def _put(self, key: Key, new: T, *, initial: bool) -> None:
        old = self.cache.put(key, new)
        for handlers in list(self._handlers):
            if old is None:
                if handlers.on_add is not None:
                    self._call(handlers.on_add, new, initial)
            elif handlers.on_update is not None:
                self._call(handlers.on_update, old, new)

    def _deleted(self, obj: T) -> None:
        for handlers in list(self._handlers):
            if handlers.on_delete is not None:
                self._call(handlers.on_delete, obj)

    def _call(self, handler: Callable[..., None], *args: Any) -> None:
        try:
            handler(*args)
        except Exception:
            log.exception("informer of %s: a handler failed", self.path.resource)

    async def _resync_every(self) -> None:
        while True:
            await asyncio.sleep(self._resync)
            for obj in self.cache.values():
                for handlers in list(self._handlers):
                    if handlers.on_update is not None:
                        self._call(handlers.on_update, obj, obj)


class SharedInformers:
    """client-go's SharedInformerFactory: one Informer per resource path for every part of one core that
    follows it, so five controllers following Pods make one watch and hold one cache. Each user registers its
    handlers and starts the informer; the informer runs until its last user stops it."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._informers: dict[tuple[str, str, str, str, str], Informer[Obj]] = {}

    def informer(self, path: core_pb2.ResourcePath, *, field_selector: str = "") -> Informer[Obj]:
        """The informer of `path`'s objects (those `field_selector` selects, when given)."""
        key = (path.group, path.version, path.resource, path.namespace, field_selector)
        found = self._informers.get(key)
        if found is None:
            found = self._informers[key] = Informer(
                self._core, path, source=CoreListWatch(self._core, path, field_selector=field_selector))
        return found


class Subscriptions:
    """One user's handlers on informers (shared or its own): start() registers each and starts its informer,
    stop() undoes both for those it started, so a user stopped without having started (a singleton whose
    leadership began with a failure) never stops an informer other users rely on."""

    def __init__(self) -> None:
        self._subscribed: list[tuple[Informer[Any], Handlers[Any]]] = []
        self._started: list[tuple[Informer[Any], Handlers[Any]]] = []

    def add(self, informer: Informer[T], handlers: Handlers[T]) -> Informer[T]:
        self._subscribed.append((informer, handlers))
        return informer

    async def start(self) -> None:
        for informer, handlers in self._subscribed:
            if (informer, handlers) in self._started:
                continue
            informer.add_handlers(handlers)
            try:
                await informer.start()
            except BaseException:
                informer.remove_handlers(handlers)
                raise
            self._started.append((informer, handlers))

    async def stop(self) -> None:
        started, self._started = self._started, []
        for informer, handlers in started:
            informer.remove_handlers(handlers)
            await informer.stop()

    def running(self) -> bool:
        return len(self._started) == len(self._subscribed) and all(i.running() for i, _ in self._started)
