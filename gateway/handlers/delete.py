"""DELETE of one object and of a collection; DeleteOptions from the body, or else from the query."""

from __future__ import annotations

import orjson
from aiohttp import web

from capstan.api.meta.v1 import meta_pb2
from capstan.core.v1 import core_pb2
from gateway import negotiation, params
from gateway.client import CoreClient, CoreError, failure
from gateway.codecs import protobuf as protobuf_codec
from gateway.codecs import yaml as yaml_codec
from gateway.handlers import request as req
from gateway.handlers import respond
from gateway.handlers.request import Call
from gateway.negotiation import CodecName
from server.codec import transcode
from server.codec.errors import DecodeError

DELETE_OPTIONS_API_VERSIONS = ("", "v1", "meta.k8s.io/v1")  # the legacy group's DeleteOptions is accepted too


async def delete(client: CoreClient, call: Call, http: web.Request) -> web.Response:
    call.admit()
    options = params.delete_options(call.query, await _body_options(http))
    deleted = await call.within_deadline(client.delete(core_pb2.DeleteRequest(
        path=call.path, options=options, accept=respond.core_accept(call.out))))
    if deleted.HasField("status"):
        return respond.status(call.out, deleted.status)
    return respond.document(call.out, deleted.object, api_version=call.api_version, kind=call.resource.kind)


async def delete_collection(client: CoreClient, call: Call, http: web.Request) -> web.Response:
    call.admit()
    list_options = params.list_options(call.query)
    options = params.delete_options(call.query, await _body_options(http))
    deleted = await call.within_deadline(client.delete_collection(core_pb2.DeleteCollectionRequest(
        path=call.path, list_options=list_options, delete_options=options, accept=respond.core_accept(call.out))))
    return respond.list_document(call.out, deleted.deleted)


async def _body_options(http: web.Request) -> meta_pb2.DeleteOptions | None:
    """DeleteOptions sent as the body, if any, in any of the three media types (kube-apiserver negotiates
    the body's serializer as for objects: 415 for others). An empty body means none."""
    data = await req.read_limited(http)
    if not data:
        return None
    media = negotiation.negotiate_input(http.headers.get("Content-Type"), protobuf=True)
    if media.codec is CodecName.PROTOBUF:
        try:
            raw, api_version, kind = protobuf_codec.decode(data)
        except protobuf_codec.EnvelopeError as err:
            raise _bad(err.message) from None
        _check_type(api_version, kind)
        try:
            return meta_pb2.DeleteOptions.FromString(raw)
        except Exception as err:  # google.protobuf.message.DecodeError, whatever the runtime calls it
            raise _bad(f"proto: DeleteOptions: {err}") from None
    if media.codec is CodecName.YAML:
        try:
            data = yaml_codec.decode(data)
        except yaml_codec.YAMLError as err:
            raise _bad(err.message) from None
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise _bad(f"json: {err}") from None
    if not isinstance(doc, dict):
        raise _bad("json: cannot unmarshal into Go value of type v1.DeleteOptions")
    api_version, kind = doc.get("apiVersion", ""), doc.get("kind", "")
    if isinstance(api_version, str) and isinstance(kind, str):
        _check_type(api_version, kind)
    try:
        return transcode.decode(meta_pb2.DeleteOptions, doc).message
    except DecodeError as err:
        raise _bad(str(err)) from None


def _check_type(api_version: str, kind: str) -> None:
    if kind not in ("", "DeleteOptions") or api_version not in DELETE_OPTIONS_API_VERSIONS:
        raise _bad("decoded object cannot be converted to DeleteOptions")


def _bad(message: str) -> CoreError:
    """A body that is no DeleteOptions. kube-apiserver passes the decoder's error on untyped, which
    becomes a 500; Capstan answers the 400 it is."""
    return CoreError(failure(400, "BadRequest", message))
