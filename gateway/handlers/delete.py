"""DELETE of one object and of a collection; DeleteOptions from the body and the query."""

from __future__ import annotations

import orjson
from aiohttp import web

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_pb2
from gateway import params
from gateway.client import CoreClient, CoreError, failure
from gateway.handlers import request as req
from gateway.handlers import respond
from gateway.handlers.request import Call
from server.codec import transcode
from server.codec.errors import DecodeError


async def delete(client: CoreClient, call: Call, http: web.Request) -> web.Response:
    options = params.delete_options(call.query, await _body_options(http))
    deleted = await client.delete(core_pb2.DeleteRequest(
        path=call.path, options=options, accept=respond.core_accept(call.out)))
    if deleted.HasField("status"):
        return respond.status(call.out, deleted.status)
    return respond.document(call.out, deleted.object, api_version=call.api_version, kind=call.resource.kind)


async def delete_collection(client: CoreClient, call: Call, http: web.Request) -> web.Response:
    options = params.delete_options(call.query, await _body_options(http))
    deleted = await client.delete_collection(core_pb2.DeleteCollectionRequest(
        path=call.path, list_options=params.list_options(call.query), delete_options=options,
        accept=respond.core_accept(call.out)))
    return respond.list_document(call.out, deleted.deleted)


async def _body_options(http: web.Request) -> meta_pb2.DeleteOptions | None:
    """DeleteOptions sent as the body (JSON, as kubectl and the clients send them), if any."""
    data = await http.content.read(req.MAX_BODY + 1)
    if len(data) > req.MAX_BODY:
        raise req.too_large()
    if not data.strip():
        return None
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise CoreError(failure(400, "BadRequest", f"json: {err}")) from None
    if not isinstance(doc, dict):
        raise CoreError(failure(400, "BadRequest", "json: cannot unmarshal into Go value of type v1.DeleteOptions"))
    try:
        return transcode.decode(meta_pb2.DeleteOptions, doc).message
    except DecodeError as err:
        raise CoreError(failure(400, "BadRequest", str(err))) from None
