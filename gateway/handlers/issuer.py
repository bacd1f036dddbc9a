"""The service account issuer's OpenID discovery documents (/.well-known/openid-configuration and
/openid/v1/jwks), as kube-apiserver serves them: the core holds the keys and answers them (404 when it issues
no tokens); the gateway adds kube's cache header."""

from __future__ import annotations

from aiohttp import web

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import restful
from gateway.access import caller_client
from gateway.client import CoreClient, CoreError
from gateway.handlers import respond

PATHS = ("/.well-known/openid-configuration", "/openid/v1/jwks")
CACHE_CONTROL = "public, max-age=3600"


def add_routes(app: web.Application, client: CoreClient) -> None:
    async def serve(http: web.Request) -> web.Response:
        if http.method != "GET":  # go-restful GET routes: any other method, HEAD included, is its 405
            return respond.status(None, restful.method_not_allowed())
        try:
            answer = await caller_client(client, http).issuer_document(
                core_pb2.IssuerDocumentRequest(path=http.path))
        except CoreError as err:
            return respond.status(None, err.status)
        return web.Response(body=answer.data, headers={"Content-Type": answer.content_type,
                                                       "Cache-Control": CACHE_CONTROL})

    for path in PATHS:
        app.router.add_route("*", path, serve)
