"""Whole lists fetched from the core a page at a time and written as one answer, in chunks.

A client that asks for a whole collection (no limit, no continue) gets one list at one revision,
exactly the bytes one core call would give. The gateway asks the core for it in pages of PAGE
items instead: no single gRPC message has to hold the collection (a 50,000-object list is ~75 MiB,
past any sane message limit), neither process builds the whole answer in one go, and the answer
is written as it arrives with chunked transfer encoding, a few milliseconds of work at a time.

Consistency is kube's for limit/continue: the first page fixes the revision (an unpaged
resourceVersion=N, "not older than N", is asked as resourceVersionMatch=NotOlderThan so the limit
does not make it Exact) and every continue token reads at that revision, so the pages are one
snapshot. When the snapshot is compacted before the last page is read (the pages take longer than
the store's retention, five minutes by default) the answer's status line and first pages are
already sent: the connection is closed without the chunked body's end, so the client sees a failed
request and lists again. kube-apiserver reads an unpaged list from etcd in one range (or from its
watch cache) and never meets this; here it needs a list that outlives the retention.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import orjson
from aiohttp import web

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import compression
from gateway import status as statuses
from gateway.client import CoreClient
from gateway.codecs import json as json_codec
from gateway.codecs import protobuf as protobuf_codec
from gateway.codecs import yaml as yaml_codec
from gateway.handlers import respond
from gateway.handlers.request import Call
from gateway.negotiation import JSON, CodecName, Output
from server.machinery.codec import wire

PAGE = 500  # items per core call while fetching a whole list
ENCODE_SLICE = 50  # items re-encoded at a time into YAML or indented JSON
# A value that cannot occur in a list's head, standing for its items while the codec's framing of them
# (what comes before the first, between two, after the last) is read off a small document.
_SENTINEL = b"7316402958130264"


def whole_list(options: meta_pb2.ListOptions) -> bool:
    """The client asked for the whole collection, not for a page."""
    return not options.limit and not getattr(options, "continue")


def first_page(request: core_pb2.ListRequest) -> core_pb2.ListRequest:
    paged = core_pb2.ListRequest()
    paged.CopyFrom(request)
    paged.omit_remaining_item_count = True  # the whole list's ListMeta has none: no page needs it counted
    opts = paged.options
    opts.limit = PAGE
    if opts.resourceVersion not in ("", "0") and not opts.resourceVersionMatch:
        opts.resourceVersionMatch = "NotOlderThan"  # an unpaged N means "not older than"; with a limit, Exact
    return paged


def large_and_last(listed: core_pb2.ListResponse) -> bool:
    """An answer of more than PAGE items with no continue token nor remaining count: the bytes StreamedList
    writes for it are respond.list_document's, a page of items at a time."""
    return (len(listed.items) > PAGE and not listed.items_joined and not getattr(listed.metadata, "continue")
            and not listed.metadata.HasField("remainingItemCount"))


def continue_of(listed: core_pb2.ListResponse) -> str:
    return str(getattr(listed.metadata, "continue"))


async def rest(client: CoreClient, call: Call, request: core_pb2.ListRequest,
               token: str) -> AsyncIterator[core_pb2.ListResponse]:
    """The pages after the first, each read at the first page's revision through its continue token; their items
    joined by the core as the answer carries them, unless the output re-encodes them a slice at a time."""
    join = call.out.codec is not CodecName.YAML and not call.out.pretty
    while token:
        page = core_pb2.ListRequest()
        page.CopyFrom(request)
        page.options.resourceVersion = ""
        page.options.resourceVersionMatch = ""
        page.options.limit = PAGE
        page.omit_remaining_item_count = True
        page.join_items = join
        setattr(page.options, "continue", token)
        listed = await call.within_deadline(client.list(page))
        yield listed
        token = continue_of(listed)


class StreamedList(web.StreamResponse):
    """The answer, written when aiohttp finishes the response (after the middlewares saw it), chunk by chunk."""

    def __init__(self, out: Output, first: core_pb2.ListResponse, pages: AsyncIterator[core_pb2.ListResponse]) -> None:
        content_type, self._chunks = _assemble(out, first, pages)
        super().__init__(status=200, headers={"Content-Type": content_type})
        self.enable_chunked_encoding()
        self._streamed = False
        self._gzip: compression.Gzip | None = None

    async def prepare(self, request: web.BaseRequest) -> Any:
        if compression.accepts_gzip(request.headers):  # a whole list spans pages: it is large
            self._gzip = compression.Gzip()
            compression.mark(self.headers)
        return await super().prepare(request)

    async def write_eof(self, data: bytes = b"") -> None:
        if not self._streamed:
            self._streamed = True
            async for chunk in self._chunks:
                if self._gzip is not None:
                    chunk = await self._gzip.compress(chunk)
                if chunk:
                    await self.write(chunk)
            if self._gzip is not None:
                data = await self._gzip.compress(data) + self._gzip.flush()
        await super().write_eof(data)


def _assemble(out: Output, first: core_pb2.ListResponse,
              pages: AsyncIterator[core_pb2.ListResponse]) -> tuple[str, AsyncIterator[bytes]]:
    """(content type, body chunks): the bytes respond.list_document gives for the whole list in one response."""
    if first.HasField("converted"):
        if first.converted.encoding == core_pb2.ENCODING_PROTOBUF:
            return out.content_type, _converted_protobuf(first, pages)
        if out.codec is CodecName.PROTOBUF:
            return out.content_type, _converted_whole(out, first, pages)
        return _json_like(out, *_converted_parts(first, pages))
    if first.encoding == core_pb2.ENCODING_PROTOBUF:
        return out.content_type, _protobuf(first, pages)
    meta = statuses.list_meta_dict(meta_pb2.ListMeta(resourceVersion=first.metadata.resourceVersion))
    head = orjson.dumps({"kind": first.kind, "apiVersion": first.api_version, "metadata": meta})
    return _json_like(out, head[:-1] + b',"items":[', _item_batches(first, pages), b"]}")


def _slices(items: Sequence[bytes]) -> Iterator[list[bytes]]:
    """A page's items PAGE at a time, each slice's bytes made only when it is reached: a first page holds the
    whole list when the watch cache answered it."""
    for start in range(0, len(items), PAGE):
        yield list(items[start:start + PAGE])


async def _item_batches(first: core_pb2.ListResponse,
                        pages: AsyncIterator[core_pb2.ListResponse]) -> AsyncIterator[list[bytes]]:
    """Each page's items, PAGE at a time, or a later page's items joined by commas as one
    (ListResponse.items_joined)."""
    for batch in _slices(first.items):
        yield batch
    async for page in pages:
        yield list(page.items)


def _json_like(out: Output, head: bytes, batches: AsyncIterator[list[bytes]],
               tail: bytes) -> tuple[str, AsyncIterator[bytes]]:
    """A compact JSON document `head` + items joined by commas + `tail`, in the output's JSON or YAML."""
    if out.codec is CodecName.YAML:
        return out.content_type, _reencoded(yaml_codec.encode, head, batches, tail)
    content_type = out.content_type if out.codec is CodecName.JSON else JSON  # a kind without protobuf
    if out.pretty:
        return content_type, _reencoded(lambda data: json_codec.encode(data, pretty=True), head, batches, tail)
    return content_type, _compact(head, batches, tail)


async def _compact(head: bytes, batches: AsyncIterator[list[bytes]], tail: bytes) -> AsyncIterator[bytes]:
    """A chunk per batch, the head before the first items and a comma before each later batch's, each chunk
    joined in one copy of its items."""
    lead = head
    async for items in batches:
        if items:
            items[0] = lead + items[0]
            yield b",".join(items)
            lead = b","
    yield (head if lead is head else b"") + tail + b"\n"  # json_codec.encode ends a compact document with a newline


async def _reencoded(encode: Callable[[bytes], bytes], head: bytes, batches: AsyncIterator[list[bytes]],
                     tail: bytes) -> AsyncIterator[bytes]:
    """The codec's bytes for the whole document, a slice of items at a time. The codec writes each item
    the same wherever it stands in the list, so its output for head + slice + tail holds the slice's
    bytes between what it writes before the first item and after the last."""
    one = encode(head + _SENTINEL + tail)
    before, after = one.split(_SENTINEL)
    between = encode(head + _SENTINEL + b"," + _SENTINEL + tail)[len(before) + len(_SENTINEL):-len(after) - len(
        _SENTINEL)]
    yield before
    separator = b""
    async for items in batches:
        for start in range(0, len(items), ENCODE_SLICE):
            whole = encode(head + b",".join(items[start:start + ENCODE_SLICE]) + tail)
            if not (whole.startswith(before) and whole.endswith(after)):
                raise ValueError("the codec framed a slice of the list differently from the whole")
            yield separator + whole[len(before):len(whole) - len(after)]
            separator = between
    yield after


def _converted_parts(first: core_pb2.ListResponse, pages: AsyncIterator[core_pb2.ListResponse]
                     ) -> tuple[bytes, AsyncIterator[list[bytes]], bytes]:
    """A Table or PartialObjectMetadataList from its pages: the first page's document with the whole list's
    ListMeta (the revision alone), and each page's rows (items) as they are. The list member is the
    document's last, so its first occurrence is its own (every string before it has its quotes escaped)."""
    data = first.converted.data
    member = _member(data)
    meta_start = data.index(b'"metadata":{')
    meta_end = data.index(b"}", meta_start) + 1  # ListMeta holds no object
    revision = orjson.loads(data[meta_start + len(b'"metadata":'):meta_end]).get("resourceVersion", "")
    meta = orjson.dumps({"resourceVersion": revision} if revision else {})
    head = data[:meta_start] + b'"metadata":' + meta + data[meta_end:data.index(member) + len(member)]

    async def batches() -> AsyncIterator[list[bytes]]:
        yield _segment(data, member)
        async for page in pages:
            yield _segment(page.converted.data, member)

    return head, batches(), b"]}"


def _member(data: bytes) -> bytes:
    return b'"rows":[' if data.startswith(b'{"kind":"Table"') else b'"items":['


def _segment(data: bytes, member: bytes) -> list[bytes]:
    """A page's rows (items), comma-joined, or nothing for an empty page (whose member may be null)."""
    at = data.find(member)
    if at < 0:
        return []
    body = data[at + len(member):-2]
    return [body] if body else []


async def _converted_whole(out: Output, first: core_pb2.ListResponse,
                           pages: AsyncIterator[core_pb2.ListResponse]) -> AsyncIterator[bytes]:
    """PartialObjectMetadataList for a protobuf client: its message is transcoded from the whole JSON."""
    head, batches, tail = _converted_parts(first, pages)
    parts = [body async for batch in batches for body in batch]
    raw = core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=head + b",".join(parts) + tail)
    yield respond.encode(out, raw.data, raw.encoding, api_version="", kind="")[0]


async def _protobuf(first: core_pb2.ListResponse, pages: AsyncIterator[core_pb2.ListResponse]) -> AsyncIterator[bytes]:
    """The envelope of the list message; its length comes first, so the pages are all read before writing. Each
    page is its items framed as the list's field 2, by the core when it joined them (ListResponse.items_joined)."""
    framed = [wire.repeated(wire.LIST_ITEMS, batch) for batch in _slices(first.items)]
    async for page in pages:
        framed.append(b"".join(page.items) if page.items_joined else wire.repeated(wire.LIST_ITEMS, page.items))
    for chunk in _enveloped(first, framed):
        yield chunk


async def _converted_protobuf(first: core_pb2.ListResponse,
                              pages: AsyncIterator[core_pb2.ListResponse]) -> AsyncIterator[bytes]:
    """A PartialObjectMetadataList the core rendered in protobuf, page by page: each page's message without its
    ListMeta (field 1) is its items, framed as field 2 already."""
    framed = [_after_list_meta(first.converted.data)]
    async for page in pages:
        framed.append(_after_list_meta(page.converted.data))
    for chunk in _enveloped(first, framed):
        yield chunk


def _after_list_meta(message: bytes) -> bytes:
    if not message.startswith(b"\x0a"):
        return message
    length, at = wire.read_varint(message, 1)
    return message[at + length:]


def _enveloped(first: core_pb2.ListResponse, framed: list[bytes]) -> Iterator[bytes]:
    """The envelope of a list message whose items, framed as field 2, are `framed`; its ListMeta the revision."""
    meta = meta_pb2.ListMeta(resourceVersion=first.metadata.resourceVersion).SerializeToString(deterministic=True)
    list_head = b"\x0a" + wire.varint(len(meta)) + meta
    length = len(list_head) + sum(map(len, framed))
    type_meta = wire.field(1, first.api_version.encode()) + wire.field(2, first.kind.encode())
    yield protobuf_codec.MAGIC + wire.field(1, type_meta) + b"\x12" + wire.varint(length) + list_head
    yield from framed
    yield b"\x1a\x00\x22\x00"

