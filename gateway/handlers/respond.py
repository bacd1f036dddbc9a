"""Encoding answers in the negotiated form: objects, lists, converted documents and Status errors."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

import orjson
from aiohttp import web
from google.protobuf.message import Message

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import status as statuses
from gateway.codecs import json as json_codec
from gateway.codecs import protobuf as protobuf_codec
from gateway.codecs import yaml as yaml_codec
from gateway.negotiation import JSON, CodecName, Output
from server.machinery.codec import transcode
from server.machinery.codec.wire import varint

WARNING_HEADER = "Warning"


def core_accept(out: Output) -> core_pb2.Encoding:
    """What to ask the core for: protobuf for protobuf clients, JSON for everyone else."""
    return core_pb2.ENCODING_PROTOBUF if out.codec is CodecName.PROTOBUF else core_pb2.ENCODING_JSON


# The meta.k8s.io documents the core renders only as JSON (conversions, and the Status of an ERROR event
# in a converted watch), which protobuf clients get as these messages: client-go's metadata informers
# ask for application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1.
_META_MESSAGES: dict[str, type[Message]] = {
    "PartialObjectMetadata": meta_pb2.PartialObjectMetadata,
    "PartialObjectMetadataList": meta_pb2.PartialObjectMetadataList,
    "Status": meta_pb2.Status,
}


def as_protobuf(data: bytes) -> tuple[bytes, str, str] | None:
    """(message bytes, apiVersion, kind) of a JSON meta document that has a protobuf form, else None."""
    doc = orjson.loads(data)
    message = _META_MESSAGES.get(doc.get("kind", "")) if isinstance(doc, dict) else None
    if message is None:
        return None
    decoded = transcode.decode(message, doc).message
    return decoded.SerializeToString(deterministic=True), str(doc.get("apiVersion", "")), str(doc["kind"])


def encode(out: Output, data: bytes, encoding: int, *, api_version: str, kind: str) -> tuple[bytes, str]:
    """(body, content type) for one document the core rendered in `encoding`."""
    if encoding == core_pb2.ENCODING_PROTOBUF:
        return protobuf_codec.encode(data, api_version=api_version, kind=kind), out.content_type
    if out.codec is CodecName.PROTOBUF:
        converted = as_protobuf(data)
        if converted is not None:
            message, doc_api_version, doc_kind = converted
            return protobuf_codec.encode(message, api_version=doc_api_version, kind=doc_kind), out.content_type
    if out.codec is CodecName.YAML:
        return yaml_codec.encode(data), out.content_type
    content_type = out.content_type if out.codec is CodecName.JSON else JSON  # a kind without protobuf
    return json_codec.encode(data, pretty=out.pretty), content_type


def document(
    out: Output, raw: core_pb2.RawObject, *, api_version: str, kind: str, status: int = 200,
    warnings: list[str] | None = None,
) -> web.Response:
    body, content_type = encode(out, raw.data, raw.encoding, api_version=api_version, kind=kind)
    return _response(body, content_type, status, warnings)


def list_document(out: Output, listed: core_pb2.ListResponse) -> web.Response:
    """A list assembled from the core's item bytes, without decoding them."""
    if listed.HasField("converted"):
        return document(out, listed.converted, api_version=listed.api_version, kind=listed.kind)
    if listed.encoding == core_pb2.ENCODING_PROTOBUF:
        meta = listed.metadata.SerializeToString(deterministic=True)
        parts = [b"\x0a", varint(len(meta)), meta]
        for item in listed.items:
            parts += (b"\x12", varint(len(item)), item)
        raw = core_pb2.RawObject(encoding=core_pb2.ENCODING_PROTOBUF, data=b"".join(parts))
    else:
        head = orjson.dumps({"kind": listed.kind, "apiVersion": listed.api_version,
                             "metadata": statuses.list_meta_dict(listed.metadata)})
        items = list(listed.items)
        if items:  # the items copied once, with the document's head and tail
            items[0] = head[:-1] + b',"items":[' + items[0]
            items[-1] += b"]}"
            data = b",".join(items)
        else:
            data = head[:-1] + b',"items":[]}'
        raw = core_pb2.RawObject(encoding=core_pb2.ENCODING_JSON, data=data)
    return document(out, raw, api_version=listed.api_version, kind=listed.kind)


def status(out: Output | None, st: meta_pb2.Status) -> web.Response:
    """A Status answer (errors and Success statuses), with Retry-After when it asks for one."""
    data = orjson.dumps(statuses.status_dict(st))
    if out is not None and out.codec is CodecName.PROTOBUF:
        body, content_type = protobuf_codec.encode(st.SerializeToString(deterministic=True), api_version="v1",
                                                   kind="Status"), out.content_type
    elif out is not None and out.codec is CodecName.YAML:
        body, content_type = yaml_codec.encode(data), out.content_type
    else:
        # No output means negotiation itself failed (or never ran); kube-apiserver writes its 406 with
        # WriteRawJSON, indented whatever was asked.
        pretty = out.pretty if out is not None else st.code == 406
        body, content_type = json_codec.encode(data, pretty=pretty), JSON
    response = _response(body, content_type, statuses.http_code(st), None)
    response.headers.update(statuses.headers(st))
    return response


def _response(body: bytes, content_type: str, status: int, warnings: list[str] | None) -> web.Response:
    response = web.Response(body=body, status=status, headers={"Content-Type": content_type})
    if warnings:
        for header in warning_headers(warnings):
            response.headers.add(WARNING_HEADER, header)
    return response


# kube-apiserver's warning recorder (endpoints/filters/warning.go): past 4,096 runes of warning text in
# one answer, every warning is cut to 256 runes, and warnings that no longer fit are left out.
WARNING_TOTAL_RUNES = 4 * 1024
WARNING_ITEM_RUNES = 256


def warning_headers(texts: Iterable[str]) -> list[str]:
    """The Warning header values kube-apiserver's recorder writes for these texts, in order: each
    `299 - "<text>"` with `"` and `\\` escaped, a repeated text once, and a text net/http could not send
    (a control character, including DEL and C1, as Go's unicode.IsControl says; lone surrogates are
    invalid UTF-8) dropped rather than written, as NewWarningHeader refuses it. Nothing of a client's
    ever reaches a header raw."""
    unique = [text for text in dict.fromkeys(texts) if text]
    kept = [text for text in unique if _sendable(text)]
    if sum(len(text) for text in kept) <= WARNING_TOTAL_RUNES:
        return [_quoted(text) for text in kept]
    out: list[str] = []
    written = 0
    for text in unique:  # truncating: each is cut first, then checked (a bad rune past the cut is gone)
        cut = text[:WARNING_ITEM_RUNES]
        if written >= WARNING_TOTAL_RUNES:
            break
        if _sendable(cut):
            written += len(cut)
            out.append(_quoted(cut))
    return out


def _sendable(text: str) -> bool:
    return not any(unicodedata.category(c) in ("Cc", "Cs") for c in text)


def _quoted(text: str) -> str:
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def go_not_found() -> web.Response:
    """Go's http.NotFound: what kube-apiserver answers for a path none of its handlers claims outside
    the API (its NotFoundHandler, util/notfoundhandler, once every path is installed)."""
    return web.Response(status=404, body=b"404 page not found\n",
                        headers={"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"})
