"""Watch streams: chunked HTTP/1.1, one JSON event per line or one protobuf frame per event.

Without timeoutSeconds a watch lasts a random 30-60 minutes, as kube-apiserver's
(kubectl get -w exits when the server closes it). A client that disconnects
cancels the handler, which closes the core's watch at once.
"""

from __future__ import annotations

import random

from aiohttp import web

from capstan.core.v1 import core_pb2
from gateway import params
from gateway.client import CoreClient
from gateway.codecs import json as json_codec
from gateway.codecs import protobuf as protobuf_codec
from gateway.handlers import respond
from gateway.handlers.request import Call
from gateway.negotiation import CodecName

MIN_REQUEST_TIMEOUT = 1800  # seconds; kube-apiserver's --min-request-timeout default


async def watch(client: CoreClient, call: Call, http: web.Request) -> web.StreamResponse:
    options = params.list_options(call.query)
    options.watch = True
    if not options.timeoutSeconds:
        options.timeoutSeconds = int(MIN_REQUEST_TIMEOUT * (1 + random.random()))
    stream = client.watch(core_pb2.WatchRequest(
        path=call.path, options=options, accept=respond.core_accept(call.out), view=call.view()))
    first = await anext(stream, None)  # a refused watch answers a plain error, before any streaming
    response = web.StreamResponse(status=200, headers={"Content-Type": call.out.content_type})
    response.enable_chunked_encoding()
    await response.prepare(http)
    try:
        batch = first
        while batch is not None:
            await response.write(b"".join(_frame(call, event) for event in batch.events))
            batch = await anext(stream, None)
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    await response.write_eof()
    return response


def _frame(call: Call, event: core_pb2.WatchEvent) -> bytes:
    data, encoding = event.object.data, event.object.encoding
    api_version, kind = call.api_version, call.resource.kind
    if event.type == "ERROR":
        api_version, kind = "v1", "Status"
    if call.out.codec is CodecName.PROTOBUF and encoding == core_pb2.ENCODING_PROTOBUF:
        return protobuf_codec.encode_watch_event(event.type, data, api_version=api_version, kind=kind)
    return json_codec.encode_watch_event(event.type, data)


