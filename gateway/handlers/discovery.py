"""Discovery endpoints: /version, /api, /apis, /apis/{group}, /api/v1 and /apis/{group}/{version}."""

from __future__ import annotations

import orjson
from aiohttp import web

from gateway import discovery, negotiation
from gateway.client import CoreError, failure
from gateway.codecs import json as json_codec
from gateway.codecs import yaml as yaml_codec
from gateway.handlers.context import Gateway
from gateway.negotiation import JSON, CodecName
from gateway.requestinfo import DiscoveryInfo


def _answer(http: web.Request, doc: object, content_type: str | None = None) -> web.Response:
    out = negotiation.negotiate_discovery(http.headers.get("Accept"))
    data = orjson.dumps(doc)
    pretty = negotiation.wants_pretty(http.query.get("pretty"), http.headers.get("User-Agent"))
    if out.codec is CodecName.YAML and content_type is None:
        return web.Response(body=yaml_codec.encode(data), headers={"Content-Type": out.content_type})
    return web.Response(body=json_codec.encode(data, pretty=pretty), headers={"Content-Type": content_type or JSON})


async def version(http: web.Request) -> web.Response:
    return web.Response(body=json_codec.encode(orjson.dumps(discovery.version()), pretty=True),
                        headers={"Content-Type": JSON})


async def serve(gateway: Gateway, info: DiscoveryInfo, http: web.Request) -> web.Response:
    discovered = await gateway.discovered()
    out = negotiation.negotiate_discovery(http.headers.get("Accept"))
    aggregated = out.conversion is not None and out.conversion.kind == "APIGroupDiscoveryList"
    if not info.group and not info.version:
        if aggregated and out.conversion is not None:
            api_version = f"{out.conversion.group}/{out.conversion.version}"
            doc = discovery.aggregated(discovered, legacy=info.prefix == "api", api_version=api_version)
            return _answer(http, doc, out.content_type)
        if info.prefix == "api":
            return _answer(http, discovery.api_versions(gateway.server_address))
        return _answer(http, discovery.api_group_list(discovered))
    if info.prefix == "apis" and not info.version:
        group = discovery.group(discovered, info.group)
        if group is None:
            raise _not_found()
        return _answer(http, group)
    listed = discovery.resource_list(discovered, info.group, info.version)
    if listed is None:
        raise _not_found()
    return _answer(http, listed)


def _not_found() -> CoreError:
    return CoreError(failure(404, "NotFound", "the server could not find the requested resource"))
