"""List: one page of a collection at one revision, filtered by selectors.

The revision follows the spec's resourceVersion x resourceVersionMatch x
limit/continue table: unset -> the latest (consistent); "0" -> any; N -> not older
than N, or exactly N with resourceVersionMatch=Exact or with a limit; a continue
token pins the first page's revision, and 410 Expired once it is compacted (carrying
a fresh token that continues at the latest revision).

Where the answer comes from is kube-apiserver 1.28's cacher's rule (`shouldDelegateList`): "0", and N
without a limit (match unset or NotOlderThan), from the watch cache when it is ready (watchcache.py),
where "0" ignores the limit (the whole collection, no continue token); everything else from the store.

A request's max_response_bytes (what its gRPC client can receive; 0, no bound, for the in-process gateway)
bounds the answer as a limit would: the items that fit, and a continue token after the last of them
(core_service.proto, ListRequest). A read from the store stops once the values read weigh more, and only what
was read is rendered, so the pages of a collection together read and render it once.

The items of a list read again are in the renderings (render.Renderings) already: a page of every object (no
selector, no view, no conversion, not bounded by max_response_bytes) is read first without its values, and only
when one of its items is not rendered yet is it read again with them, at the same revision.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from server.machinery import continuation, errors
from server.machinery.codec import wire
from server.machinery.values import Obj
from server.objects import computed, conversion, options, render, views
from server.objects.context import Context, reach
from server.objects.resolve import resolve
from server.objects.selection import Selection, selection
from server.objects.storeerrors import translate
from server.objects.watchcache import PrefixCache
from server.registry.printing.printers import row_order
from server.registry.printing.table import (
    META_V1,
    partial_object_metadata,
    partial_object_metadata_list,
    table_head,
    table_rows,
)
from server.registry.resources import Resource
from storage import Compacted, KeyValue, ListResult, StorageError

CHUNK = 500  # keys read per store call while filling a filtered page
# Items rendered (or Table rows built) between yields to the event loop: a large list is a few
# milliseconds of work at a time, so health checks and small requests are answered meanwhile.
RENDER_SLICE = 100
CONVERT_SLICE = 25  # Table rows and PartialObjectMetadata cost ~4x an item's rendering
# Bytes of a ListResponse that are not its items (ListMeta with a continue token, kind, apiVersion, encoding),
# with room to spare: what max_response_bytes leaves for them.
LIST_OVERHEAD = 4096

EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)


@dataclass(frozen=True, slots=True)
class Page:
    revision: int
    kvs: list[KeyValue]
    continue_token: str
    remaining: int | None
    rendered: list[bytes] | None = None  # the items, when they were all rendered already; kvs' values are then b""


Prerendered = Callable[[Sequence[KeyValue]], list[bytes] | None]  # the items of these kvs, if all are rendered


async def list_(ctx: Context, req: core_pb2.ListRequest) -> core_pb2.ListResponse:
    resource = resolve(ctx.registry, req.path, "list")
    if resource.computed is not None:
        return await computed.list_(ctx, resource, req)
    encoding = render.encoding_for(resource, req.accept)
    typed = not resource.schema.proto_message
    prerendered: Prerendered | None = None
    if req.view.view == core_pb2.VIEW_UNSPECIFIED and not conversion.reads_converted(resource):
        def prerendered(kvs: Sequence[KeyValue]) -> list[bytes] | None:
            return ctx.renderings.held(resource, kvs, encoding, typed)
    page = await read_page(ctx, resource, req.path.namespace, req.options, req.max_response_bytes,
                           counted=not req.omit_remaining_item_count, prerendered=prerendered)
    if conversion.reads_converted(resource):  # the page in one call: a failed conversion fails the list whole
        page = Page(page.revision, await conversion.kvs(resource, page.kvs), page.continue_token, page.remaining)
    if req.view.view != core_pb2.VIEW_UNSPECIFIED:
        return await _view(resource, req, page)
    items = page.rendered
    if items is None:
        items = await _render(ctx, resource, page.kvs, encoding, typed, req.max_response_bytes)
    fitting = _fitting(items, req.max_response_bytes)
    if fitting < len(page.kvs):  # the rest on later pages: a continue token after the last item sent
        last = page.kvs[fitting - 1].key
        selected = req.options.labelSelector or req.options.fieldSelector
        rest = None if selected or req.omit_remaining_item_count else len(page.kvs) - fitting + (page.remaining or 0)
        page = Page(page.revision, page.kvs[:fitting],
                    continuation.encode(page.revision, _relative(resource.key_prefix(req.path.namespace), last)), rest)
        items = items[:fitting]
    metadata = _list_meta(page)
    joined = req.join_items and req.accept != core_pb2.ENCODING_JSON_TEXT
    if joined and items:
        items = [wire.repeated(wire.LIST_ITEMS, items) if encoding == render.PROTOBUF else b",".join(items)]
    return core_pb2.ListResponse(metadata=metadata, encoding=encoding, items=items, kind=resource.list_kind,
                                 api_version=resource.api_version, items_joined=joined)


async def _render(ctx: Context, resource: Resource, kvs: list[KeyValue], encoding: render.Encoding, typed: bool,
                  max_bytes: int) -> list[bytes]:
    """The items of `kvs`, a slice at a time; with `max_bytes`, no more once they weigh more than that."""
    items: list[bytes] = []
    rendered_bytes = 0
    for start in range(0, len(kvs), RENDER_SLICE):
        if start:
            await asyncio.sleep(0)
        rendered = ctx.renderings.items(resource, kvs[start:start + RENDER_SLICE], encoding, typed)
        items += rendered
        if max_bytes:  # what cannot be sent is not rendered
            rendered_bytes += sum(map(len, rendered))
            if rendered_bytes > max_bytes:
                break
    return items


def _fitting(items: list[bytes], max_bytes: int) -> int:
    """How many of the items, from the first, fit in a ListResponse of at most `max_bytes` (0: no bound), with
    LIST_OVERHEAD left for everything else it holds; at least one."""
    if not max_bytes:
        return len(items)
    room = max_bytes - LIST_OVERHEAD
    for count, item in enumerate(items):
        size = len(item)
        room -= size + 1 + (size.bit_length() + 6) // 7  # the field's tag, its length as a varint, the bytes
        if room < 0:
            return max(count, 1)
    return len(items)


async def _view(resource: Resource, req: core_pb2.ListRequest, page: Page) -> core_pb2.ListResponse:
    """A page as a Table or PartialObjectMetadataList: the converted document, its ListMeta beside it."""
    metadata = _list_meta(page)
    if req.view.view == core_pb2.VIEW_PARTIAL_OBJECT_METADATA_LIST and req.accept == core_pb2.ENCODING_PROTOBUF:
        converted = await _partial_messages(req.view, page.kvs, metadata)
        kind = "PartialObjectMetadataList"
    else:
        list_meta = {"resourceVersion": str(page.revision), "continue": page.continue_token,
                     "remainingItemCount": page.remaining}
        converted = await _converted(resource, req.view, page.kvs, list_meta)
        kind = ""
    return core_pb2.ListResponse(converted=converted, encoding=converted.encoding, metadata=metadata, kind=kind,
                                 api_version=(req.view.api_version or META_V1) if kind else "")


def _list_meta(page: Page) -> meta_pb2.ListMeta:
    metadata = meta_pb2.ListMeta(resourceVersion=str(page.revision))
    if page.continue_token:
        setattr(metadata, "continue", page.continue_token)
    if page.remaining is not None:
        metadata.remainingItemCount = page.remaining
    return metadata


async def _partial_messages(view: core_pb2.ViewOptions, kvs: list[KeyValue], metadata: meta_pb2.ListMeta
                            ) -> core_pb2.RawObject:
    """A PartialObjectMetadataList's protobuf message (views.partial_message for each item), a slice at a time."""
    views.check(view)
    meta = metadata.SerializeToString(deterministic=True)
    parts = [b"\x0a", wire.varint(len(meta)), meta]
    for start in range(0, len(kvs), RENDER_SLICE):
        if start:
            await asyncio.sleep(0)
        parts.append(wire.repeated(wire.LIST_ITEMS, map(views.partial_message, kvs[start:start + RENDER_SLICE])))
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_PROTOBUF, data=b"".join(parts))


async def _converted(
    resource: Resource, view: core_pb2.ViewOptions, kvs: list[KeyValue], list_meta: Mapping[str, object]
) -> core_pb2.RawObject:
    """views.many, a slice at a time: the same document, its rows (or items) built and written between yields."""
    include = views.check(view)
    api_version = view.api_version or META_V1
    convert: Callable[[Obj, str], Obj]
    if view.view == core_pb2.VIEW_TABLE:
        now = time.time_ns()

        def convert(obj: Obj, rv: str) -> Obj:
            return table_rows(resource, [(obj, rv)], include_object=include, api_version=api_version,
                                     now_ns=now)[0]
    elif view.view == core_pb2.VIEW_PARTIAL_OBJECT_METADATA_LIST:
        def convert(obj: Obj, rv: str) -> Obj:
            return partial_object_metadata(obj, rv, api_version=api_version)
    else:
        return views.many(resource, view, kvs, list_meta)  # the 406 for a list asked as one object
    order = row_order(resource) if view.view == core_pb2.VIEW_TABLE else None
    if order is not None:  # a printer that sorts its rows (FlowSchemas) sorts the page whole, as kube's does
        kvs = sorted(kvs, key=lambda kv: order(render.load(kv.value)))
    parts: list[bytes] = []
    for start in range(0, len(kvs), CONVERT_SLICE):
        await asyncio.sleep(0)
        converted = [convert(render.load(kv.value), str(kv.mod_revision)) for kv in kvs[start:start + CONVERT_SLICE]]
        parts.append(render.go_json(converted)[1:-1])
    if not parts:
        return views.many(resource, view, kvs, list_meta)
    if view.view == core_pb2.VIEW_TABLE:
        head = table_head(resource, list_meta=list_meta, api_version=api_version, rows=[{}])
        member = b'"rows":[{}]}'
    else:
        head = partial_object_metadata_list([], list_meta=list_meta, api_version=api_version)
        head["items"] = [{}]
        member = b'"items":[{}]}'
    # The member is the document's last: its placeholder row gives way to the rendered ones.
    data = render.go_json(head)
    if not data.endswith(member):
        raise AssertionError(f"{member!r} is not the last member of {data[:200]!r}")
    return core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON,
                              data=data[:-len(member)] + member[:-4] + b",".join(parts) + b"]}")


async def read_page(ctx: Context, resource: Resource, namespace: str, opts: meta_pb2.ListOptions,
                    max_bytes: int = 0, *, counted: bool = True, prerendered: Prerendered | None = None) -> Page:
    """The page the options ask for; with `max_bytes`, a read from the store stops once the values read weigh
    more (a continue token after the last one read), since no more could be sent. Not `counted`: the page's
    `remaining` is None rather than the number of keys after it. With `prerendered`, a page of every object read
    from the store is read without values first, and comes with its items (`rendered`) when it has them all."""
    options.list_options(opts, watch=False)
    chosen = selection(resource, opts.labelSelector, opts.fieldSelector)
    limit = opts.limit if opts.limit > 0 else None  # kube 1.28 lists everything for a limit below 1, negative too
    prefix = resource.key_prefix(namespace)
    token = getattr(opts, "continue")
    rv, match = opts.resourceVersion, opts.resourceVersionMatch
    start_after: bytes | None = None
    if token:
        cont = continuation.decode(token)  # a token that does not decode is refused first, as etcd3's GetList does
        if rv not in ("", "0"):
            raise errors.bad_request("specifying resource version is not allowed when using continue")
        revision: int | None = cont.revision
        start_after = prefix + cont.start.removesuffix("\x00").encode()
        try:
            return await _page(ctx, prefix, chosen, revision, start_after, limit, max_bytes, counted, prerendered)
        except Compacted:
            status = errors.expired(EXPIRED_CONTINUE).status
            setattr(status.metadata, "continue", continuation.encode(ctx.store.current_revision(), cont.start))
            raise errors.ApiError(status) from None
    cached = await _cache(ctx, resource, rv, match, limit)
    if cached is not None:
        return await _cached_page(cached, resource, prefix, chosen)
    revision = None
    if rv not in ("", "0"):
        wanted = options.resource_version(rv)
        if match == "Exact" or (not match and limit):
            revision = wanted
        else:
            await reach(ctx, wanted)
    try:
        return await _page(ctx, prefix, chosen, revision, start_after, limit, max_bytes, counted, prerendered)
    except Compacted:
        if revision is not None:
            raise errors.expired("The resourceVersion for the provided list is too old.") from None
    # The read chose its own snapshot, which was compacted before the read was done (a list is read in
    # slices): a newer one answers as well (etcd would have read it in one range).
    try:
        return await _page(ctx, prefix, chosen, None, start_after, limit, max_bytes, counted, prerendered)
    except Compacted:
        raise errors.expired("The resourceVersion for the provided list is too old.") from None


async def _cache(ctx: Context, resource: Resource, rv: str, match: str, limit: int | None) -> PrefixCache | None:
    """The watch cache that answers this list, when kube's cacher would answer it and it is ready."""
    caches = ctx.caches
    if caches is None or not caches.enabled or rv == "":
        return None
    if rv == "0":
        wanted = 0
    elif limit or match not in ("", "NotOlderThan"):
        return None
    else:
        wanted = options.resource_version(rv)
    try:
        return await caches.fresh(resource.key_prefix(), wanted)
    except StorageError as err:
        raise translate(err) from None


async def _cached_page(cache: PrefixCache, resource: Resource, prefix: bytes, chosen: Selection) -> Page:
    """Every selected object under `prefix` at the cache's revision: one page, as kube's cacher answers."""
    snapshot = cache.snapshot(prefix)
    if chosen.everything:
        return Page(snapshot.revision, list(snapshot.kvs), "", None)
    name = f"{resource.group}/{resource.version}/{resource.resource}"
    picked: list[KeyValue] = []
    kvs = snapshot.kvs
    for start in range(0, len(kvs), CHUNK):
        if start:
            await asyncio.sleep(0)
        for kv in kvs[start:start + CHUNK]:
            labels, fields = cache.attributes(kv, name, lambda value: chosen.attributes(render.load(value)))
            if chosen.matches_attributes(labels, fields):
                picked.append(kv)
    return Page(snapshot.revision, picked, "", None)


async def _page(
    ctx: Context,
    prefix: bytes,
    chosen: Selection,
    revision: int | None,
    start_after: bytes | None,
    limit: int | None,
    max_bytes: int = 0,
    counted: bool = True,
    prerendered: Prerendered | None = None,
) -> Page:
    """Fill one page. Compacted escapes (the caller words it); other store errors are translated."""
    if chosen.everything and max_bytes and (limit is None or limit > CHUNK):
        return await _bounded_page(ctx, prefix, revision, start_after, limit, max_bytes, counted)
    if chosen.everything:
        rendered = None
        if prerendered is None:
            result = await _list(ctx, prefix, revision, start_after, limit, counted)
        else:
            result = await _list(ctx, prefix, revision, start_after, limit, counted, values=False)
            rendered = prerendered(result.kvs)
            if rendered is None:  # the same page at the same revision, with the values to render
                result = await _list(ctx, prefix, result.revision, start_after, limit, counted)
        token = ""
        if limit and result.remaining:
            token = continuation.encode(result.revision, _relative(prefix, result.kvs[-1].key))
        return Page(result.revision, list(result.kvs), token, (result.remaining or None) if counted else None,
                    rendered)
    picked: list[KeyValue] = []
    by_key = chosen.by_key
    while True:
        want = max(CHUNK, limit or 0) if limit else None
        result = await _list(ctx, prefix, revision, start_after, want)
        revision = result.revision
        await asyncio.sleep(0)
        for kv in result.kvs:
            if chosen.matches_key(kv.key) if by_key else chosen.matches(render.load(kv.value)):
                picked.append(kv)
                if limit and len(picked) == limit:
                    more = kv.key != result.kvs[-1].key or result.remaining > 0
                    token = continuation.encode(revision, _relative(prefix, kv.key)) if more else ""
                    return Page(revision, picked, token, None)
        if not result.remaining or not result.kvs:
            return Page(revision, picked, "", None)
        start_after = result.kvs[-1].key


async def _bounded_page(
    ctx: Context, prefix: bytes, revision: int | None, start_after: bytes | None, limit: int | None, max_bytes: int,
    counted: bool = True,
) -> Page:
    """The page read CHUNK keys at a time, all at the first read's revision, until `limit` keys or until the
    values read weigh more than `max_bytes`; a continue token after the last key read when more follow."""
    kvs: list[KeyValue] = []
    weight = 0
    while True:
        want = CHUNK if limit is None else min(CHUNK, limit - len(kvs))
        result = await _list(ctx, prefix, revision, start_after, want, counted)
        revision = result.revision
        kvs += result.kvs
        weight += sum(len(kv.value) for kv in result.kvs)
        more = bool(result.remaining and result.kvs)
        if not more or weight > max_bytes or (limit is not None and len(kvs) >= limit):
            token = continuation.encode(revision, _relative(prefix, kvs[-1].key)) if more else ""
            return Page(revision, kvs, token, (result.remaining or None) if counted else None)
        start_after = result.kvs[-1].key
        await asyncio.sleep(0)


async def _list(
    ctx: Context, prefix: bytes, revision: int | None, start_after: bytes | None, limit: int | None,
    counted: bool = True, *, values: bool = True,
) -> ListResult:
    try:
        return await ctx.store.list(prefix, at_revision=revision, start_after=start_after, limit=limit,
                                    counted=counted, values=values)
    except Compacted:
        raise
    except StorageError as err:
        raise translate(err) from None


def _relative(prefix: bytes, key: bytes) -> str:
    """The continue token's start: the key after `key`, relative to the listed prefix."""
    return key[len(prefix):].decode() + "\x00"
