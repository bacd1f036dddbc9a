"""The gateway's link in the security chain: it collects each request's credentials (gateway/credentials.py)
and, for every request that names no resource (/version, /healthz, /metrics, /openapi/..., discovery under
/api and /apis, and unknown paths), asks the core whether the caller may make it before anything is served —
kube authorizes those paths as non-resource URLs. Resource requests are authorized by the core in the verb
itself. Either way the core decides; a refusal is its 401/403 Status. The console's static assets and its login
exchange are the exception, served to anyone (gateway/console/routes.py says why). The core's API Priority and Fairness
classification of the request's calls comes back as kube's X-Kubernetes-PF-* response headers
(server/machinery/flowcontrol.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import parsed, requestinfo
from gateway.client import CoreClient, CoreError
from gateway.console import routes as console
from gateway.credentials import CREDENTIALS_KEY, of
from gateway.handlers import respond
from server.machinery import flowcontrol

__all__ = ["CREDENTIALS_KEY", "caller_client", "middleware"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def caller_client(client: CoreClient, http: web.Request) -> CoreClient:
    """The client that makes this request's calls with its caller's credentials."""
    return client.as_caller(http[CREDENTIALS_KEY])


def middleware(client: CoreClient) -> Middleware:
    @web.middleware
    async def access(request: web.Request, handler: Handler) -> web.StreamResponse:
        http = request
        credentials = of(http)  # the limits may have collected them already
        classified = flowcontrol.begin()  # filled by the core's classification of this request's calls
        info = parsed.info_of(http)
        response: web.StreamResponse
        if not isinstance(info, requestinfo.RequestInfo) and not console.public(http.method, http.path):
            verb = "get" if http.method == "HEAD" else http.method.lower()
            try:
                await client.as_caller(credentials).access(core_pb2.AccessRequest(verb=verb, path=http.path))
            except CoreError as err:
                response = respond.status(None, err.status)
                response.headers.update(classified.headers())
                return response
        response = await handler(http)
        if not response.prepared:  # a streamed answer (a watch) sent them before its first byte
            response.headers.update(classified.headers())
        return response

    return access
