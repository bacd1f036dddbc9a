"""Discovery endpoints: /version, /api, /apis, /apis/{group}, /api/v1 and /apis/{group}/{version}.

The legacy documents (APIVersions, APIGroupList, APIGroup, APIResourceList) are meta/v1 messages and
go out in any of the three media types, protobuf included, as kube-apiserver serves them. The
aggregated document (apidiscovery.k8s.io APIGroupDiscoveryList) has no protobuf schema here, so a
clause asking for it in protobuf is passed over for the next one (kubectl lists JSON after it).
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web
from google.protobuf.message import Message

from capstan.api.meta.v1 import meta_pb2
from gateway import discovery, negotiation, params, restful
from gateway.client import CoreError
from gateway.codecs import json as json_codec
from gateway.codecs import protobuf as protobuf_codec
from gateway.codecs import yaml as yaml_codec
from gateway.handlers import respond
from gateway.handlers.context import Gateway
from gateway.handlers.request import query_of
from gateway.negotiation import JSON, CodecName, Output
from gateway.requestinfo import DiscoveryInfo
from server.machinery.codec import transcode

_MESSAGES: dict[str, type[Message]] = {
    "APIVersions": meta_pb2.APIVersions,
    "APIGroupList": meta_pb2.APIGroupList,
    "APIGroup": meta_pb2.APIGroup,
    "APIResourceList": meta_pb2.APIResourceList,
}


def _answer(http: web.Request, out: Output, doc: dict[str, Any]) -> web.Response:
    if out.codec is CodecName.PROTOBUF:
        message = transcode.decode(_MESSAGES[doc["kind"]], doc).message
        body = protobuf_codec.encode(message.SerializeToString(deterministic=True),
                                     api_version=doc.get("apiVersion", "v1"), kind=doc["kind"])
        return web.Response(body=body, headers={"Content-Type": out.content_type})
    data = orjson.dumps(doc)
    if out.codec is CodecName.YAML:
        return web.Response(body=yaml_codec.encode(data), headers={"Content-Type": out.content_type})
    pretty = out.pretty or negotiation.wants_pretty(http.query.get("pretty"), http.headers.get("User-Agent"))
    return web.Response(body=json_codec.encode(data, pretty=pretty), headers={"Content-Type": out.content_type})


async def version(http: web.Request) -> web.Response:
    """Always indented JSON (kube-apiserver writes it raw), to an Accept go-restful lets through (the route
    produces application/json: 406 otherwise). Routed outside the resource dispatcher, so it answers its own
    Status for a malformed ?timeout, and go-restful's 405 for a method other than GET, HEAD included
    (routes/version.go routes GET only)."""
    try:
        if http.method != "GET":  # kube registers no HEAD routes
            raise CoreError(restful.method_not_allowed())
        refusal = restful.route_refusal("GET", None, None, http.headers.get("Accept"), (JSON,))
        if refusal is not None:
            raise CoreError(refusal)
        params.deadline(query_of(http))
    except CoreError as err:
        return respond.status(status_form(restful.status_accept(http.headers.get("Accept"))), err.status)
    return web.Response(body=json_codec.encode(orjson.dumps(discovery.version()), pretty=True),
                        headers={"Content-Type": JSON})


def status_form(accept: str | None) -> Output | None:
    """How kube writes a Status no handler wrote (ErrorNegotiated): in what the Accept header negotiates, or
    indented JSON when it negotiates nothing."""
    try:
        return negotiation.negotiate_discovery(accept)
    except negotiation.NegotiationError:
        return None


async def serve(gateway: Gateway, info: DiscoveryInfo, http: web.Request) -> web.Response:
    params.deadline(query_of(http))
    accept = http.headers.get("Accept")
    discovered = await gateway.discovered()
    if not info.group and not info.version:
        out = negotiation.negotiate_discovery(_without_protobuf_aggregated(accept))
        if out.conversion is not None:  # aggregated discovery: the only conversion negotiation admits here
            doc = discovery.aggregated(discovered, legacy=info.prefix == "api", api_version=out.conversion.api_version)
            return _answer(http, out, doc)
        if info.prefix == "api":
            return _answer(http, out, discovery.api_versions(gateway.server_address))
        return _answer(http, out, discovery.api_group_list(discovered))
    out = _legacy(accept)
    if info.prefix == "apis" and not info.version:
        group = discovery.group(discovered, info.group)
        if group is None:
            raise _not_found()
        return _answer(http, out, group)
    listed = discovery.resource_list(discovered, info.group, info.version)
    if listed is None:
        raise _not_found()
    return _answer(http, out, listed)


def _without_protobuf_aggregated(accept: str | None) -> str | None:
    """The Accept header less its clauses asking for aggregated discovery in protobuf, which has no
    schema here; 406 when nothing else is left."""
    if not accept or not accept.strip(" \t"):
        return accept
    clauses = [c for c in accept.split(",") if not _protobuf_aggregated(c)]
    if not clauses:
        raise negotiation.NotAcceptable(negotiation.MEDIA_TYPES)
    return ",".join(clauses)


def _legacy(accept: str | None) -> Output:
    """Negotiation for a group or group-version document, which takes no conversion at all
    (DefaultEndpointRestrictions): clauses asking for one are passed over."""
    if not accept or not accept.strip(" \t"):
        return negotiation.negotiate_discovery(accept)
    clauses = [c for c in accept.split(",") if not _params(c) & {"as", "g", "v"}]
    if not clauses:
        raise negotiation.NotAcceptable(negotiation.MEDIA_TYPES)
    return negotiation.negotiate_discovery(",".join(clauses))


def _params(clause: str) -> set[str]:
    return {p.partition("=")[0].strip(" \t").lower() for p in clause.split(";")[1:]}


def _protobuf_aggregated(clause: str) -> bool:
    media, _, rest = clause.partition(";")
    if media.strip(" \t").lower() != negotiation.PROTOBUF:
        return False
    return any(p.strip(" \t").lower() == "as=apigroupdiscoverylist" for p in rest.split(";"))


def _not_found() -> CoreError:
    """A version under go-restful's /api or /apis/{group} web service that nothing serves."""
    return CoreError(restful.not_found())
