"""Watch: a collection's changes as Kubernetes watch events, from a resourceVersion on.

Where it starts (the spec's watch table; the initial state of "0" and of sendInitialEvents comes from the
watch cache when it is ready, as kube-apiserver's cacher gives it, see watchcache.py):
- resourceVersion unset or "0": synthetic ADDED events for the current state, then changes;
- "N": changes after N ("Start at Exact"); 410 Expired as an ERROR event once N is compacted;
- sendInitialEvents=true: the current state (not older than N) as ADDED, then a BOOKMARK
  annotated `k8s.io/initial-events-end: "true"`, then changes.
Selectors apply to both sides of a change: an object entering the selection is an
ADDED for this watcher, one leaving it a DELETED (the old object at the new revision).

What one event costs does not grow with the watchers that see it: the watchers of a collection
that read a published batch as it came (storage hands them one shared batch) and want it whole
(no selector, no view) get the very same WatchResponse messages, built once per batch, resource
and encoding (`_Shared`); the transports can then frame them once as well.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence

import orjson

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import apimetrics, errors
from server.machinery.codec import transcode
from server.machinery.values import Obj
from server.objects import conversion, options, render, views, watchcache
from server.objects.context import Context, reach
from server.objects.resolve import resolve
from server.objects.selection import Selection, selection
from server.objects.storeerrors import store_call, translate
from server.objects.watchcache import PrefixCache
from server.registry.resources import Resource
from storage import Compacted, Event, EventType, KeyValue, StorageError, StoreClosed, Watch, WatcherTooSlow

BOOKMARK_INTERVAL = 60.0  # seconds between BOOKMARK events, as kube-apiserver's watch cache sends them
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
MESSAGE_BUDGET = 1 << 20  # bytes of events per WatchResponse
INITIAL_PAGE = 500  # objects of the initial state read, rendered and sent at a time


async def watch(
    ctx: Context, req: core_pb2.WatchRequest, *, bookmark_interval: float = BOOKMARK_INTERVAL,
    initial_page: int = INITIAL_PAGE,
) -> AsyncIterator[core_pb2.WatchResponse]:
    """Validation errors raise before the first message; later failures end the stream with an ERROR event.

    The initial state is read from one snapshot in pages of `initial_page` objects, each rendered and
    handed on before the next is read, so a watcher holds at most one page however large the collection
    (and one message while its client does not read: the transports wait for the client, see
    docs/architecture.md). Its renderings are the shared ones, so concurrent watchers render each once.
    """
    resource = resolve(ctx.registry, req.path, "watch")
    opts = req.options
    options.list_options(opts, watch=True, watch_list=ctx.watch_list)
    chosen = selection(resource, opts.labelSelector, opts.fieldSelector)
    converted = views.EventViews(resource, req.view) if req.view.view != core_pb2.VIEW_UNSPECIFIED else None
    encoding = render.encoding_for(resource, req.accept if converted is None else core_pb2.ENCODING_JSON)
    prefix = resource.key_prefix(req.path.namespace)
    rv = opts.resourceVersion
    wanted = options.resource_version(rv) if rv not in ("", "0") else 0
    initial = opts.sendInitialEvents if opts.HasField("sendInitialEvents") else not wanted
    deadline = time.monotonic() + opts.timeoutSeconds if opts.timeoutSeconds > 0 else None
    stream = _Stream(resource, chosen, encoding, converter=converted, renderings=ctx.renderings)
    figures = apimetrics.WatchFigures(resource.group, resource.version, resource.kind)

    start = wanted
    cache = await _cache(ctx, resource, wanted) if initial and (rv == "0" or opts.HasField("sendInitialEvents")) \
        else None
    # A watch of the changes after a revision the store has not reached starts now and passes over the changes up
    # to that revision, as kube's watch cache does (it waits only to send initial events).
    now = ctx.store.current_revision()
    after = wanted if not initial and wanted > now else 0
    if after:
        start = now
    elif cache is None:
        await reach(ctx, wanted)
    if initial:
        # A page that fails after the first (its revision compacted while the client read) raises the
        # 410 mid-stream: the gateway writes it as an ERROR event, a gRPC client gets it as the status.
        snapshot: _Snapshot | _Cached = (
            _Snapshot(ctx, prefix, initial_page) if cache is None else _Cached(cache.snapshot(prefix), initial_page))
        while (kvs := await snapshot.next_page()) is not None:
            try:
                kvs = await conversion.kvs(resource, kvs)
            except errors.ApiError as err:  # as kube's watch: the failure ends it with an ERROR event
                yield core_pb2.WatchResponse(events=[stream.error(err.status)])
                return
            added = [stream.added(kv.key, kv.value, kv.mod_revision) for kv in kvs]
            for chunk in _chunks([e for e in added if e is not None]):
                figures.events.inc(len(chunk))
                yield core_pb2.WatchResponse(events=chunk)
        start = snapshot.revision
        if opts.HasField("sendInitialEvents"):
            yield core_pb2.WatchResponse(events=[stream.bookmark(start, initial_events_end=True)])
    elif not wanted:
        start = ctx.store.current_revision()

    changes = ctx.store.watch(prefix, from_revision=start)
    figures.watchers.inc()
    # The deadline closes the store watch, which ends the loop below; no timer per batch.
    closer = asyncio.get_running_loop().call_later(deadline - time.monotonic(), changes.close) if deadline else None
    # So does the resource's end (its CRD deleted, or the version no longer served), as kube-apiserver ends the
    # watches of a custom resource's storage when it tears that down: the client lists again and learns of it.
    registry = ctx.registry
    forget = registry.on_change(
        lambda: changes.close() if registry.get(resource.group, resource.version, resource.resource) is None else None)
    reader = _Reader(changes, bookmark_interval if opts.allowWatchBookmarks else None)
    last = start
    try:
        while True:
            try:
                events = await reader.next()
            except Compacted as err:
                status = errors.expired(f"too old resource version: {err.requested} ({err.compact_revision})").status
                yield core_pb2.WatchResponse(events=[stream.error(status)])
                return
            except (StopAsyncIteration, WatcherTooSlow, StoreClosed):
                return  # timed out, or dropped: the client re-watches from its last resourceVersion (or re-lists)
            except StorageError as err:
                yield core_pb2.WatchResponse(events=[stream.error(translate(err).status)])
                return
            if events is None:
                progress = max(last, changes.progress())
                if progress > after:  # never a bookmark before the revision the client asked to start after
                    yield core_pb2.WatchResponse(events=[stream.bookmark(progress)])
                continue
            last = events[-1].revision
            if after:
                events = [e for e in events if e.revision > after]
                if not events:
                    continue
                after = 0
            try:
                events = await conversion.events(resource, events)
            except errors.ApiError as err:
                yield core_pb2.WatchResponse(events=[stream.error(err.status)])
                return
            for response in stream.responses(events):
                figures.events.inc(len(response.events))
                yield response
    finally:
        figures.watchers.dec()
        forget()
        if closer is not None:
            closer.cancel()
        changes.close()


async def _cache(ctx: Context, resource: Resource, wanted: int) -> PrefixCache | None:
    """The watch cache that gives the initial state (kube's cacher gives it for "0" and sendInitialEvents), if
    ready; 504 when neither it nor the store reaches `wanted` in time."""
    caches = ctx.caches
    if caches is None or not caches.enabled:
        return None
    return await store_call(caches.fresh(resource.key_prefix(), wanted))


class _Cached:
    """A watch cache's snapshot, handed out a page at a time as _Snapshot hands out the store's."""

    def __init__(self, snapshot: watchcache.Snapshot, page: int) -> None:
        self.revision = snapshot.revision
        self._kvs = snapshot.kvs
        self._page = max(page, 1)
        self._at = 0
        self._done = False

    async def next_page(self) -> Sequence[KeyValue] | None:
        if self._done:
            return None
        page = self._kvs[self._at:self._at + self._page]
        self._at += self._page
        self._done = self._at >= len(self._kvs)
        return page


class _Snapshot:
    """The keys under a prefix at one revision (the first page's), a page at a time."""

    def __init__(self, ctx: Context, prefix: bytes, page: int) -> None:
        self._ctx = ctx
        self._prefix = prefix
        self._page = max(page, 1)
        self._after: bytes | None = None
        self._done = False
        self.revision = 0

    async def next_page(self) -> Sequence[KeyValue] | None:
        """The next keys in order; None after the last page."""
        if self._done:
            return None
        page = await store_call(self._ctx.store.list(
            self._prefix, at_revision=self.revision or None, start_after=self._after, limit=self._page))
        self.revision = self.revision or page.revision
        self._done = not page.more
        if page.kvs:
            self._after = page.kvs[-1].key
        return page.kvs


class _Reader:
    """Batches from a store watch; with an interval, None when it passes with nothing (time for a BOOKMARK).

    The store's watch keeps its place: nothing is lost to a bookmark, and a batch that is there already
    costs no timer."""

    def __init__(self, changes: Watch, interval: float | None) -> None:
        self._changes = changes
        self._interval = interval

    async def next(self) -> Sequence[Event] | None:
        if self._interval is None:
            return await self._changes.next_batch()
        return await self._changes.next_batch(self._interval) or None


def _chunks(events: list[core_pb2.WatchEvent]) -> list[list[core_pb2.WatchEvent]]:
    """Events grouped into messages of at most MESSAGE_BUDGET bytes (one event alone may be larger):
    gRPC clients refuse messages over 4 MiB by default, and an object may be 1 MiB or more."""
    chunks: list[list[core_pb2.WatchEvent]] = []
    size = MESSAGE_BUDGET
    for event in events:
        cost = len(event.object.data) + 32
        if size + cost > MESSAGE_BUDGET:
            chunks.append([])
            size = 0
        chunks[-1].append(event)
        size += cost
    return chunks


class _Shared:
    """The WatchResponses of the batches last translated whole, by (batch, resource, encoding) identity.

    Contract: a cached value is only ever read (the messages are handed to many watchers as they are),
    and an entry holds its batch and resource, so their ids cannot be reused while it is cached.
    """

    SIZE = 64  # batches: more than the distinct (resource, encoding) pairs watched at one time

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[int, int, int], tuple[object, object, list[core_pb2.WatchResponse]]] = (
            OrderedDict())

    def get(self, events: Sequence[Event], resource: Resource,
            encoding: render.Encoding) -> list[core_pb2.WatchResponse] | None:
        found = self._entries.get((id(events), id(resource), encoding))
        return None if found is None else found[2]

    def put(self, events: Sequence[Event], resource: Resource, encoding: render.Encoding,
            responses: list[core_pb2.WatchResponse]) -> None:
        self._entries[(id(events), id(resource), encoding)] = (events, resource, responses)
        if len(self._entries) > self.SIZE:
            self._entries.popitem(last=False)


_shared = _Shared()


class _Stream:
    """Store events -> watch events for one watcher: selection, rendering, bookmarks."""

    def __init__(
        self,
        resource: Resource,
        chosen: Selection,
        encoding: render.Encoding,
        *,
        converter: views.EventViews | None,
        renderings: render.Renderings,
    ) -> None:
        self._resource = resource
        self._chosen = chosen
        self._by_key = chosen.by_key  # decided from each event's key: no object decoded to filter it
        self._encoding = encoding
        self._views = converter
        self._renderings = renderings

    def responses(self, events: Sequence[Event]) -> list[core_pb2.WatchResponse]:
        """The batch's messages; shared with every other watcher of the resource given the same batch
        (a tuple: storage's shared batch) in the same encoding, when this one wants every event as is."""
        if not (self._chosen.everything and self._views is None and isinstance(events, tuple)):
            return [core_pb2.WatchResponse(events=chunk) for chunk in _chunks(self.translate(events))]
        found = _shared.get(events, self._resource, self._encoding)
        if found is None:
            found = [core_pb2.WatchResponse(events=chunk) for chunk in _chunks(self.translate(events))]
            _shared.put(events, self._resource, self._encoding, found)
        return found

    def translate(self, events: Sequence[Event]) -> list[core_pb2.WatchEvent]:
        out: list[core_pb2.WatchEvent] = []
        for event in events:
            translated = self._one(event)
            if translated is not None:
                out.append(translated)
        return out

    def _one(self, event: Event) -> core_pb2.WatchEvent | None:
        revision = event.revision
        prev = event.prev
        key = event.kv.key
        if self._chosen.everything:
            if event.type is EventType.DELETE:
                return self._event("DELETED", key, prev.value if prev else b"", revision, old=True)
            return self._event("ADDED" if prev is None else "MODIFIED", key, event.kv.value, revision)
        if self._by_key:  # the key names the object before and after alike
            if not self._chosen.matches_key(key):
                return None
            if event.type is EventType.DELETE:
                return self._event("DELETED", key, prev.value if prev else b"", revision, old=True)
            return self._event("ADDED" if prev is None else "MODIFIED", key, event.kv.value, revision)
        was = prev is not None and self._chosen.matches(render.load(prev.value))
        if event.type is EventType.DELETE:
            return self._event("DELETED", key, prev.value, revision, old=True) if was and prev else None
        now = self._chosen.matches(render.load(event.kv.value))
        if now:
            return self._event("MODIFIED" if was else "ADDED", key, event.kv.value, revision)
        if was and prev is not None:
            return self._event("DELETED", key, prev.value, revision, old=True)
        return None

    def added(self, key: bytes, value: bytes, revision: int) -> core_pb2.WatchEvent | None:
        if self._by_key:
            if not self._chosen.matches_key(key):
                return None
        elif not self._chosen.everything and not self._chosen.matches(render.load(value)):
            return None
        return self._event("ADDED", key, value, revision)

    def _event(self, kind: str, key: bytes, value: bytes, revision: int, *, old: bool = False) -> core_pb2.WatchEvent:
        if self._views is not None:
            converted = self._views.convert(render.load(value), str(revision))
            if converted is not None:
                return core_pb2.WatchEvent(type=kind, object=views.raw(converted))
        data = self._renderings.event(self._resource, key, value, revision, self._encoding, old=old)
        return core_pb2.WatchEvent(type=kind, object=core_pb2.RawObject(encoding=self._encoding, data=data))

    def bookmark(self, revision: int, *, initial_events_end: bool = False) -> core_pb2.WatchEvent:
        """A BOOKMARK: an empty object of the kind carrying only the resourceVersion (and the annotation)."""
        metadata: Obj = {"resourceVersion": str(revision)}
        if initial_events_end:
            metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
        if self._views is not None:
            converted = self._views.convert({"metadata": metadata}, str(revision))
            if converted is not None:
                return core_pb2.WatchEvent(type="BOOKMARK", object=views.raw(converted))
        if self._encoding == core_pb2.ENCODING_PROTOBUF:
            data = self._resource.schema.to_proto({"metadata": metadata})
        else:
            data = orjson.dumps({
                "kind": self._resource.kind, "apiVersion": self._resource.api_version,
                "metadata": {**metadata, "creationTimestamp": None},
            })
        return core_pb2.WatchEvent(type="BOOKMARK", object=core_pb2.RawObject(encoding=self._encoding, data=data))

    def error(self, status: meta_pb2.Status) -> core_pb2.WatchEvent:
        """An ERROR event; its object is the Status, encoded like the other events."""
        if self._encoding == core_pb2.ENCODING_PROTOBUF:
            data = status.SerializeToString(deterministic=True)
        else:
            data = render.go_json({"kind": "Status", "apiVersion": "v1", **transcode.encode(status)})
        return core_pb2.WatchEvent(type="ERROR", object=core_pb2.RawObject(encoding=self._encoding, data=data))
