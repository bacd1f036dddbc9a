"""The watch cache: per resource, its objects as the store's watch last left them, for the reads that
kube-apiserver's cacher answers from memory.

Which reads (kube-apiserver 1.28, staging/src/k8s.io/apiserver/pkg/storage/cacher: `shouldDelegateList`,
`Cacher.Get`, `Cacher.Watch`):
- LIST with resourceVersion "0" (any limit is ignored: the whole list, no continue token), or "N" without a
  limit and with resourceVersionMatch unset or NotOlderThan (not older than N);
- GET with resourceVersion "0" or "N" (not older than N);
- WATCH with resourceVersion "0" or sendInitialEvents: the initial state comes from here.
An unset resourceVersion (a consistent read), a continue token, resourceVersionMatch=Exact and "N" with a
limit read the store, as kube's cacher delegates them. A watch's changes always come from the store's
watch, which on etcd replays from the feed's in-memory window (storage/etcd/feed.py) and on LMDB from its log.

How a cache keeps current: one per storage prefix (a resource's keys in every namespace; the resources
stored as another share it), started by the first read that could use it. That read, and every read until
the cache has listed, goes to the store, as kube's cacher forwards reads until it is ready. The cache lists
the prefix at one revision, then follows `store.watch` from it, applying each batch of events in one step on
the event loop; so whenever a read runs, the cache holds the store's state at exactly one revision,
`revision()`: the watch's progress, which also moves on while writes elsewhere raise the store's revision.
A Compacted or dropped watch (WatcherTooSlow) makes it list again; meanwhile reads go to the store.

Freshness: "N" waits until `revision()` >= N, at most `fresh_wait` (3 s, kube's blockTimeout), then 504
Too large resource version when the store has not reached N either (when it has, the cache is lagging and
the store answers). "0" may be stale by kube's rules; here it first waits (at most `zero_wait`) until the
cache has caught up with the revision this process last acknowledged, so a client reading "0" after a
write answered by this server sees it.

Memory: a cache holds one KeyValue per object (the stored bytes, shared with the store's watch events, not
copied), its keys' sorted order, and the labels and field values of objects a selector read (parsed once per
revision of an object). `max_bytes` bounds the stored bytes held by all caches together: a cache that
would pass it is dropped and its prefix read from the store for `idle_seconds`. A cache no read used for
`idle_seconds` is stopped and dropped (the next read starts it again).
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from storage import (
    Compacted,
    Event,
    EventType,
    KeyValue,
    RevisionTooLarge,
    StorageError,
    Store,
    StoreClosed,
    Watch,
    WatcherTooSlow,
)
from storage.tasks import cancel

log = logging.getLogger(__name__)

LIST_PAGE = 500  # keys per store read while listing a prefix
RETRY = 0.5  # seconds before listing again after a store error
POLL = 0.01  # seconds between looks at the watch's progress while a read waits for a revision


@dataclass(frozen=True, slots=True)
class CacheConfig:
    enabled: bool = True
    max_bytes: int = 1 << 30  # stored bytes held by all caches together
    idle_seconds: float = 600.0  # a cache unread this long is dropped; an oversized prefix is not cached as long
    fresh_wait: float = 3.0  # how long "not older than N" waits for the cache (kube's blockTimeout)
    zero_wait: float = 1.0  # how long "0" waits for the cache to reach this process's acknowledged revision


DISABLED = CacheConfig(enabled=False)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Keys under a prefix at one revision, in key order (immutable)."""

    revision: int
    kvs: Sequence[KeyValue]


Attributes = tuple[Mapping[str, str], Mapping[str, str]]  # an object's labels and field values


def prefix_end(prefix: bytes) -> bytes:
    """The first key after every key starting with `prefix` (prefixes here end in '/', never in 0xff)."""
    return prefix[:-1] + bytes((prefix[-1] + 1,))


class PrefixCache:
    """The objects under one storage prefix at `revision()`, kept by a list-then-watch task."""

    def __init__(self, store: Store, prefix: bytes, owner: WatchCaches) -> None:
        self._store = store
        self.prefix = prefix
        self._owner = owner
        self._objects: dict[bytes, KeyValue] = {}
        self._order: list[bytes] = []  # sorted keys, as of the last `_sorted` (may hold deleted keys)
        self._pending: list[bytes] = []  # keys added since, unsorted
        self._removed = False  # a key left since the last `_sorted`
        self._attributes: dict[bytes, tuple[int, dict[str, Attributes]]] = {}  # by key: (mod_revision, by resource)
        self.bytes = 0  # stored bytes held
        self._listed = 0  # the revision of the last list (before its watch has said anything)
        self._watch: Watch | None = None
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self.ready = False
        self.used = time.monotonic()
        self._task: asyncio.Task[None] | None = asyncio.get_running_loop().create_task(
            self._run(), name=f"capstan-watch-cache {prefix.decode(errors='replace')}")

    # -- reads ------------------------------------------------------------------------------------------------------

    def revision(self) -> int:
        """The store revision the cache's state is at: every change under the prefix up to it is applied."""
        watch = self._watch
        return max(self._listed, watch.progress()) if watch is not None else self._listed

    async def wait_for(self, revision: int, timeout: float) -> bool:
        """Whether the cache is ready and at `revision` or later within `timeout` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.ready and self.revision() < revision:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            # Woken when a batch is applied; the poll sees progress made by writes under other prefixes.
            waiter: asyncio.Future[None] = loop.create_future()
            entry = (revision, waiter)
            self._waiters.append(entry)
            timer = loop.call_later(min(remaining, POLL), _wake, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                if entry in self._waiters:
                    self._waiters.remove(entry)
        return self.ready

    def get(self, key: bytes) -> KeyValue | None:
        self.used = time.monotonic()
        return self._objects.get(key)

    def snapshot(self, prefix: bytes) -> Snapshot:
        """The keys under `prefix` (this cache's prefix or a namespace within it) at `revision()`."""
        self.used = time.monotonic()
        order = self._sorted()
        objects = self._objects
        if prefix == self.prefix:
            kvs = [objects[k] for k in order]
        else:
            lo = bisect.bisect_left(order, prefix)
            hi = bisect.bisect_left(order, prefix_end(prefix), lo)
            kvs = [objects[k] for k in order[lo:hi]]
        return Snapshot(self.revision(), kvs)

    def attributes(self, kv: KeyValue, resource: str, compute: Callable[[bytes], Attributes]) -> Attributes:
        """`compute(kv.value)` for a selector, kept while the object stays at this revision."""
        memo = self._attributes.get(kv.key)
        if memo is None or memo[0] != kv.mod_revision:
            memo = (kv.mod_revision, {})
            if self._objects.get(kv.key) is kv:  # not an object the cache no longer holds
                self._attributes[kv.key] = memo
        found = memo[1].get(resource)
        if found is None:
            found = memo[1][resource] = compute(kv.value)
        return found

    def _sorted(self) -> list[bytes]:
        """The keys in order: each call after a change makes a new list, so a snapshot's order never changes."""
        if self._removed or self._pending:
            objects = self._objects
            pending = set(self._pending)
            order = [k for k in self._order if k in objects and k not in pending] if self._removed else list(
                self._order)
            order += sorted(k for k in pending if k in objects)
            order.sort()  # two sorted runs: merged in linear time
            self._order, self._pending, self._removed = order, [], False
        return self._order

    # -- following the store ----------------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                await self._list()
                await self._follow()
            except asyncio.CancelledError:
                raise
            except StoreClosed:
                self._reset()
                return
            except (Compacted, WatcherTooSlow) as err:
                log.info("watch cache of %r lists again: %s", self.prefix, err)
                self._reset()
            except StorageError as err:
                log.warning("watch cache of %r failed (%s); listing again", self.prefix, err)
                self._reset()
                await asyncio.sleep(RETRY)
            except _Oversized:
                self._reset()
                self._owner.oversized(self)
                return
            except Exception:  # a bug of ours must not leave a cache serving stale state
                log.exception("watch cache of %r failed; listing again", self.prefix)
                self._reset()
                await asyncio.sleep(RETRY)

    async def _list(self) -> None:
        objects: dict[bytes, KeyValue] = {}
        size = 0
        revision: int | None = None
        after: bytes | None = None
        while True:
            page = await self._store.list(self.prefix, at_revision=revision, start_after=after, limit=LIST_PAGE)
            revision = page.revision
            for kv in page.kvs:
                objects[kv.key] = kv
                size += len(kv.value)
            self._owner.check_room(self, size)
            if not page.more or not page.kvs:
                break
            after = page.kvs[-1].key
        assert revision is not None
        self._owner.account(self, size)
        self._objects, self.bytes = objects, size
        self._order, self._pending, self._removed = sorted(objects), [], False
        self._attributes = {}
        self._listed = revision
        self._watch = self._store.watch(self.prefix, from_revision=revision)
        self.ready = True
        self._wake_waiters()

    async def _follow(self) -> None:
        watch = self._watch
        assert watch is not None
        while True:
            events = await watch.next_batch()
            self._apply(events)
            self._wake_waiters()

    def _apply(self, events: Sequence[Event]) -> None:
        objects, attributes = self._objects, self._attributes
        grown = 0
        for event in events:
            kv = event.kv
            key = kv.key
            known = objects.get(key)
            if known is not None:
                grown -= len(known.value)
            if event.type is EventType.DELETE:
                if known is not None:
                    del objects[key]
                    self._removed = True
                attributes.pop(key, None)
            else:
                if known is None:
                    self._pending.append(key)
                objects[key] = kv
                grown += len(kv.value)
        if grown:
            self.bytes += grown
            self._owner.check_room(self, self.bytes)
            self._owner.account(self, self.bytes)

    def _wake_waiters(self) -> None:
        if not self._waiters:
            return
        revision = self.revision()
        for wanted, waiter in self._waiters:
            if wanted <= revision:
                _wake(waiter)

    def _reset(self) -> None:
        """Not ready: the state is dropped and reads go to the store until the next list."""
        self.ready = False
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        self._objects, self._order, self._pending, self._removed = {}, [], [], False
        self._attributes = {}
        self._owner.account(self, 0)
        self.bytes = 0
        for _, waiter in self._waiters:
            _wake(waiter)

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel(task)
        self._reset()


class _Oversized(Exception):
    """The caches would hold more than CacheConfig.max_bytes with this one."""


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class WatchCaches:
    """Every prefix's cache of one core, started on first use, dropped when idle or too large."""

    def __init__(self, store: Store, config: CacheConfig = DISABLED) -> None:
        self._store = store
        self.config = config
        self._caches: dict[bytes, PrefixCache] = {}
        self._held: dict[bytes, int] = {}  # stored bytes by prefix
        self._refused: dict[bytes, float] = {}  # prefix -> monotonic time until which it is not cached
        self._swept = time.monotonic()
        self._closed = False

    @property
    def enabled(self) -> bool:
        return self.config.enabled and not self._closed

    def cache(self, prefix: bytes) -> PrefixCache | None:
        """The ready cache of `prefix`, or None (the read goes to the store); starts it on first use."""
        if not self.enabled:
            return None
        now = time.monotonic()
        if now - self._swept > min(60.0, self.config.idle_seconds):
            self._sweep(now)
        found = self._caches.get(prefix)
        if found is None:
            if self._refused.get(prefix, 0.0) > now:
                return None
            self._refused.pop(prefix, None)
            self._caches[prefix] = PrefixCache(self._store, prefix, self)
            return None
        found.used = now
        return found if found.ready else None

    async def fresh(self, prefix: bytes, revision: int) -> PrefixCache | None:
        """The cache of `prefix` at `revision` or later (0: any, after catching up with what this process
        acknowledged, briefly); None when the store should answer. RevisionTooLarge when neither the cache nor
        the store reaches `revision` within fresh_wait."""
        cache = self.cache(prefix)
        if cache is None:
            return None
        if revision == 0:
            await cache.wait_for(self._store.current_revision(), self.config.zero_wait)
            return cache if cache.ready else None
        if await cache.wait_for(revision, self.config.fresh_wait):
            return cache
        if self._store.current_revision() < revision:
            raise RevisionTooLarge(revision, self._store.current_revision())
        return None

    @property
    def held_bytes(self) -> int:
        return sum(self._held.values())

    def prefixes(self) -> list[bytes]:
        return sorted(self._caches)

    def check_room(self, cache: PrefixCache, size: int) -> None:
        """_Oversized when `cache` holding `size` bytes would take all caches past max_bytes."""
        if self.held_bytes - self._held.get(cache.prefix, 0) + size > self.config.max_bytes:
            raise _Oversized

    def account(self, cache: PrefixCache, size: int) -> None:
        if self._caches.get(cache.prefix) is cache:
            self._held[cache.prefix] = size

    def oversized(self, cache: PrefixCache) -> None:
        """`cache` would not fit: dropped, and its prefix read from the store for a while."""
        log.warning("watch cache of %r dropped: the caches would hold more than %d bytes", cache.prefix,
                    self.config.max_bytes)
        self._drop(cache)
        self._refused[cache.prefix] = time.monotonic() + self.config.idle_seconds

    def _drop(self, cache: PrefixCache) -> None:
        if self._caches.get(cache.prefix) is cache:
            del self._caches[cache.prefix]
            self._held.pop(cache.prefix, None)
            task = asyncio.get_running_loop().create_task(cache.stop())
            _background.add(task)
            task.add_done_callback(_background.discard)

    def _sweep(self, now: float) -> None:
        self._swept = now
        for cache in list(self._caches.values()):
            if now - cache.used > self.config.idle_seconds:
                self._drop(cache)

    async def close(self) -> None:
        self._closed = True
        caches, self._caches = list(self._caches.values()), {}
        self._held.clear()
        for cache in caches:
            await cache.stop()


_background: set[asyncio.Task[None]] = set()  # stops of dropped caches, held until done
