"""Requests to a group version an extension API server serves, proxied there as kube-aggregator proxies them.

The core decides first (its Proxy method: authentication, impersonation and authorization with the request's
RequestInfo attributes, as kube-apiserver's handler chain does before the aggregator's proxy handler runs; then
the APIService, its availability and a ready endpoint of its Service). The gateway then dials that endpoint over
TLS (the APIService's caBundle and `<service>.<namespace>.svc`, or insecureSkipTLSVerify) presenting the
front-proxy client certificate, sends the request with the caller's identity as X-Remote-* headers
(server/machinery/aggregation.py), and streams the body both ways as it comes: a watch, a long LIST or a large
upload is never buffered whole. The backend's status, headers and body are the answer, unchanged.

What kube answers when it cannot proxy is plain text, not a Status (http.Error): 503 `service unavailable` for an
APIService that is not Available or a Service without endpoints, 503 with the dial error for a backend that does
not answer (`dial tcp <ip>:<port>: connect: connection refused`, as Go words it) or fails TLS verification.
"""

from __future__ import annotations

import errno
import ssl

import aiohttp
from aiohttp import web
from yarl import URL

from capstan.core.v1 import core_service_pb2 as core_pb2
from gateway import requestinfo
from gateway.client import CoreClient, CoreError
from gateway.handlers import respond
from server.machinery.aggregation import RESPONSE_DROPPED, ClientContexts, forwarded_headers

CONNECT_TIMEOUT = 30.0  # kube's proxy transport dials for at most 30 s
_UNAVAILABLE = "service unavailable"


class Proxier:
    """The gateway's connections to extension API servers: one client session (its pooled connections keyed by
    endpoint and TLS context) and the TLS contexts."""

    def __init__(self, contexts: ClientContexts) -> None:
        self.contexts = contexts
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _text(code: int, message: str) -> web.Response:
    """Go's http.Error: the message and a newline, as text."""
    return web.Response(status=code, text=message + "\n", content_type="text/plain", charset="utf-8",
                        headers={"X-Content-Type-Options": "nosniff"})


def _dial_error(err: BaseException, address: str) -> str:
    """What kube's proxy answers when the backend cannot be reached: Go's dial error for a refused connection,
    else the error as Python words it."""
    cause = err.os_error if isinstance(err, aiohttp.ClientConnectorError) else err
    if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == errno.ECONNREFUSED:
        return f"dial tcp {address}: connect: connection refused"
    return f"error trying to reach service: {str(err) or type(err).__name__}"


def _request(info: requestinfo.RequestInfo | requestinfo.DiscoveryInfo, http: web.Request) -> core_pb2.ProxyRequest:
    if isinstance(info, requestinfo.RequestInfo):
        path = core_pb2.ResourcePath(group=info.group, version=info.version, resource=info.resource,
                                     subresource=info.subresource, namespace=info.namespace, name=info.name)
        return core_pb2.ProxyRequest(verb=info.verb, path=path, url_path=http.path)
    verb = "get" if http.method == "HEAD" else http.method.lower()
    return core_pb2.ProxyRequest(verb=verb, path=core_pb2.ResourcePath(group=info.group, version=info.version),
                                 url_path=http.path)


async def proxy(proxier: Proxier, client: CoreClient,
                info: requestinfo.RequestInfo | requestinfo.DiscoveryInfo, http: web.Request) -> web.StreamResponse:
    try:
        target = await client.proxy(_request(info, http))
    except CoreError as err:
        if err.status.code == 503 and err.status.message == _UNAVAILABLE:
            return _text(503, _UNAVAILABLE)
        return respond.status(None, err.status)
    host = f"[{target.host}]" if ":" in target.host else target.host
    url = URL(f"https://{host}:{target.port}{http.raw_path}", encoded=True)
    extra = {e.key: list(e.values) for e in target.extra}
    headers = forwarded_headers(http.headers.items(), target.user, target.groups, extra)
    try:
        context = proxier.contexts.context(target.ca_bundle, target.insecure_skip_tls_verify)
    except (ssl.SSLError, ValueError) as err:
        return _text(500, f"failed to build the TLS configuration: {err}")  # kube's transport building error
    body = http.content.iter_any() if http.body_exists else None
    try:
        upstream = await proxier.session().request(
            http.method, url, headers=headers, data=body, ssl=context, server_hostname=target.server_name,
            allow_redirects=False)
    except (TimeoutError, aiohttp.ClientError, OSError) as err:
        return _text(503, _dial_error(err, f"{host}:{target.port}"))
    try:
        headers = [(name, value) for name, value in upstream.headers.items() if name.lower() not in RESPONSE_DROPPED]
        # An answer of known length that came whole in one read goes out in one write, headers and body together;
        # any other (a watch, chunked, or longer) has its headers sent at once and its body streamed.
        first = await upstream.content.readany() if upstream.content_length is not None else b""
        if upstream.content_length is not None and upstream.content.at_eof():
            whole = web.Response(status=upstream.status, reason=upstream.reason, body=first)
            for name, value in headers:
                whole.headers.add(name, value)
            return whole
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        for name, value in headers:
            response.headers.add(name, value)
        if upstream.content_length is not None:
            response.content_length = upstream.content_length
        await response.prepare(http)
        if first:
            await response.write(first)
        async for chunk in upstream.content.iter_any():
            await response.write(chunk)
        await response.write_eof()
        return response
    except BaseException:
        upstream.close()  # the client left (a watch ended by it) or the write failed: the backend's stream ends too
        raise
    finally:
        upstream.release()
