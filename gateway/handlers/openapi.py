"""The OpenAPI endpoints, answered as kube-openapi's handlers answer them.

  GET /openapi/v3                  the index: each document's URL, with its hash
  GET /openapi/v3/<name>           a group version's document ("api/v1", "apis/apps/v1") or a root one
                                   ("api", "apis", "apis/apps", "version") as JSON; with ?hash= it is immutable
                                   (cached for a year), and a stale hash is redirected (301) to the current one
  GET /openapi/v2                  every group version in one Swagger 2.0 document, as JSON or in
                                   gnostic's protobuf encoding (what kubectl asks for)

Every answer carries an ETag (the SHA-512 of the JSON document) and honours If-None-Match with 304.

Deliberate differences from kube-apiserver, each for a client that would otherwise misread the answer:
an unknown group version answers a 404 Status (handler3 answers an empty 200), and a request for the
protobuf form of a v3 document answers 406 (Capstan builds its JSON form only; kubectl asks for JSON).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from aiohttp import web

from gateway.discovery import GIT_VERSION
from gateway.handlers.context import Gateway
from gateway.negotiation import JSON, parse_accept
from gateway.openapi import documents
from gateway.openapi.documents import Documents

# /openapi/v2's protobuf media types: kube-openapi answers both with the first.
SWAGGER_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
SWAGGER_PROTOBUF_DEPRECATED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def add_routes(app: web.Application, gateway: Gateway) -> None:
    """Route /openapi/* on app; register before any catch-all route."""
    cache = documents.Cache(version=GIT_VERSION)

    async def current() -> Documents:
        return cache.get(await gateway.discovered())

    async def index(http: web.Request) -> web.StreamResponse:
        docs = await current()
        return _serve(http, docs.index.body, JSON, etag=docs.index.etag, docs=docs)

    async def group_version(http: web.Request) -> web.StreamResponse:
        name = http.match_info["name"]
        docs = await current()
        doc = docs.group_versions.get(name)
        if doc is None:
            return web.Response(status=404)  # kube's OpenAPI v3 handler: a bare 404
        if _negotiate(http.headers.get("Accept"), (JSON,)) is None:
            return web.Response(status=406, headers={"Vary": "Accept"})
        requested = http.query.get("hash", "")
        if requested and requested != doc.etag:
            raise web.HTTPMovedPermanently(documents.server_relative_url(name, doc.etag), headers={"Vary": "Accept"})
        response = _serve(http, doc.body, JSON, etag=doc.etag, docs=docs)
        if requested:
            response.headers["Cache-Control"] = "public, immutable"
            response.headers["Expires"] = format_datetime(datetime.now(UTC) + timedelta(days=365), usegmt=True)
        return response

    async def swagger(http: web.Request) -> web.StreamResponse:
        docs = await current()
        media = _negotiate(http.headers.get("Accept"), (JSON, SWAGGER_PROTOBUF_DEPRECATED, SWAGGER_PROTOBUF))
        if media is None:
            return web.Response(status=406, headers={"Vary": "Accept"})
        if media == JSON:
            return _serve(http, docs.swagger.body, JSON, etag=docs.swagger.etag, docs=docs)
        return _serve(http, docs.swagger_protobuf, SWAGGER_PROTOBUF, etag=docs.swagger.etag, docs=docs)

    # kube's mux serves these paths whatever the method
    app.router.add_route("*", "/openapi/v3", index)
    app.router.add_route("*", "/openapi/v3/{name:.*}", group_version)  # a prefix: /openapi/v3/ is group version ""
    app.router.add_route("*", "/openapi/v2", swagger)


def _serve(http: web.Request, body: bytes, content_type: str, *, etag: str, docs: Documents) -> web.Response:
    """body with its ETag and Vary: Accept, honouring If-None-Match (304) as Go's http.ServeContent does."""
    quoted = f'"{etag}"'
    headers = {"ETag": quoted, "Last-Modified": docs.last_modified, "Vary": "Accept"}
    if quoted in (tag.strip() for tag in http.headers.get("If-None-Match", "").split(",")):
        return web.Response(status=304, headers=headers)
    return web.Response(body=body, headers={**headers, "Content-Type": content_type})


def _negotiate(accept: str | None, offered: tuple[str, ...]) -> str | None:
    """The first offered media type the best Accept clause allows (goautoneg's order); no Accept is */*."""
    for clause in parse_accept(accept or "*/*"):
        if clause.q <= 0:
            continue
        for media in offered:
            kind, _, sub = media.partition("/")
            if clause.type in (kind, "*") and clause.subtype in (sub, "*"):
                return media
    return None
