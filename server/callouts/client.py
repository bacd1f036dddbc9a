"""The webhook client: one POST of a JSON review to a clientConfig, as kube-apiserver's webhook client makes it.

Contract:
- A `url` is called as written; a `service` is resolved by the `Resolver` the owner passes in to one ready
  endpoint (host, port) of the Service's port, and called there with TLS verified under the server name
  `<name>.<namespace>.svc`, as kube-apiserver with --enable-aggregator-routing does.
- TLS is verified against the configuration's caBundle (the system roots when it is empty); a caBundle that
  is no certificate fails the call, never the process.
- Every call carries its own deadline (`timeout` seconds, also sent as kube's `?timeout=` query) and runs on
  the event loop without blocking it; connections are reused per configuration (one aiohttp session each).
- Failures raise `CallError` whose text is what kube writes after `failed to call webhook: ` (`Post "URL":
  dial tcp ...: connect: connection refused`, `... context deadline exceeded`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import posixpath
import ssl
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from server.machinery import tracing
from server.machinery.tlsroots import as_go_pool

MAX_SESSIONS = 256  # sessions kept for configurations seen lately; the oldest is closed beyond it


@dataclass(frozen=True, slots=True)
class ServiceReference:
    namespace: str
    name: str
    path: str = ""
    port: int = 443


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """admissionregistration's WebhookClientConfig (and apiextensions' WebhookClientConfig): exactly one of
    `url` and `service`; ca_bundle is the PEM the JSON carries base64-encoded."""

    url: str = ""
    service: ServiceReference | None = None
    ca_bundle: bytes = b""
    # A kubeconfig's user (authentication and authorization webhooks): the client certificate and key (PEM)
    # presented in the handshake, and a bearer token sent with each call.
    client_cert: bytes = b""
    client_key: bytes = b""
    token: str = ""

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> ClientConfig:
        svc = raw.get("service")
        service = None
        if isinstance(svc, Mapping):
            service = ServiceReference(str(svc.get("namespace") or ""), str(svc.get("name") or ""),
                                       str(svc.get("path") or ""), int(svc.get("port") or 443))
        bundle = raw.get("caBundle") or ""
        try:
            pem = base64.b64decode(bundle) if isinstance(bundle, str) else b""
        except (binascii.Error, ValueError):
            pem = b""
        return cls(str(raw.get("url") or ""), service, pem)

    def shown_url(self, timeout: float) -> str:
        """The URL kube names in its errors: the service's DNS name, with the `timeout` query."""
        if self.service is not None:
            s = self.service
            base = f"https://{s.name}.{s.namespace}.svc:{s.port}{rest_path(s.path)}"
        else:
            base = self.target()
        return f"{base}?timeout={go_seconds(timeout)}"

    def target(self) -> str:
        """The URL of a `url` config as client-go's rest client requests it: scheme and host, then the path
        cleaned (rest_path); a query is not carried (admission validation refuses one)."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}{rest_path(parts.path)}"


def rest_path(path: str) -> str:
    """path.Join("/", path), as client-go's rest client builds every webhook call's path: no repeated or
    trailing slash, "." and ".." resolved. envtest's URLs ("https://host:port/" + "/validate") rely on it."""
    return "/" + posixpath.normpath("/" + path).lstrip("/")


class CallError(Exception):
    """A call without a usable answer; str() is kube's reason text. code: the HTTP status when one came."""

    def __init__(self, text: str, code: int = 0) -> None:
        super().__init__(text)
        self.code = code


# (namespace, name, port) of a Service -> (host, port) of one ready endpoint; raises CallError when none is.
Resolver = Callable[[str, str, int], Awaitable[tuple[str, int]]]


def go_seconds(seconds: float) -> str:
    """A duration as Go prints it, for the whole or fractional seconds webhooks are given."""
    return f"{int(seconds)}s" if seconds == int(seconds) else f"{seconds:g}s"


class Callouts:
    """The client of every webhook of one core."""

    def __init__(self, resolve: Resolver | None = None) -> None:
        self._resolve = resolve
        self._sessions: OrderedDict[tuple[Any, ...], aiohttp.ClientSession] = OrderedDict()
        self._closing: set[asyncio.Task[None]] = set()  # evicted sessions' closes, held until done

    async def post(self, config: ClientConfig, body: bytes, timeout: float) -> tuple[int, bytes]:
        """POST `body` (JSON) within `timeout` seconds: (HTTP status, response body). CallError when no
        answer came (unreachable, refused, TLS, deadline)."""
        shown = config.shown_url(timeout)
        try:
            async with asyncio.timeout(timeout):
                target, server_name = await self._target(config)
                session = self._session(config)
                url = f"{target}?timeout={go_seconds(timeout)}"
                headers = {"Content-Type": "application/json", "Accept": "application/json"}
                if config.token:
                    headers["Authorization"] = f"Bearer {config.token}"
                with tracing.span("Call webhook", {"url": shown}) as current:
                    tracing.inject(headers)  # the webhook continues the request's trace
                    async with session.post(url, data=body, server_hostname=server_name,
                                            headers=headers) as resp:
                        tracing.set_attribute(current, "http.status_code", resp.status)
                        return resp.status, await resp.read()
        except TimeoutError:
            raise CallError(f'Post "{shown}": context deadline exceeded') from None
        except CallError:
            raise
        except ssl.SSLError as err:
            raise CallError(f'Post "{shown}": tls: {_tls_reason(err)}') from None
        except aiohttp.ClientConnectorCertificateError as err:
            raise CallError(f'Post "{shown}": tls: {_tls_reason(err.certificate_error)}') from None
        except aiohttp.ClientConnectorError as err:
            raise CallError(f'Post "{shown}": dial tcp {err.host}:{err.port}: connect: connection refused') from None
        except (aiohttp.ClientError, OSError, ValueError) as err:
            raise CallError(f'Post "{shown}": {err}') from None

    async def _target(self, config: ClientConfig) -> tuple[str, str | None]:
        """The URL to call (without the timeout query) and the TLS server name to verify."""
        if config.service is None:
            if not config.url:
                raise CallError("neither URL nor service is set in the webhook client config")
            return config.target(), None
        s = config.service
        if self._resolve is None:
            raise CallError(f'no endpoints available for service "{s.name}"')
        host, port = await self._resolve(s.namespace, s.name, s.port)
        shown_host = f"[{host}]" if ":" in host else host
        return f"https://{shown_host}:{port}{rest_path(s.path)}", f"{s.name}.{s.namespace}.svc"

    def _session(self, config: ClientConfig) -> aiohttp.ClientSession:
        key = (config.url, config.service, config.ca_bundle, config.client_cert, config.client_key)
        session = self._sessions.get(key)
        if session is not None and not session.closed:
            self._sessions.move_to_end(key)
            return session
        tls = _tls_context(config)
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls, limit=0),
                                        timeout=aiohttp.ClientTimeout(total=None))
        self._sessions[key] = session
        while len(self._sessions) > MAX_SESSIONS:
            _, oldest = self._sessions.popitem(last=False)
            closing = asyncio.get_running_loop().create_task(oldest.close())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)
        return session

    async def close(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), OrderedDict()
        for session in sessions:
            await session.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)


def _tls_context(config: ClientConfig) -> ssl.SSLContext:
    """Verification against the caBundle (or the system roots). A bundle that holds no certificate verifies
    nothing: every call fails its handshake as kube's would with an unusable pool."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    if config.ca_bundle:
        context = as_go_pool(ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
        context.verify_mode = ssl.CERT_REQUIRED
        context.check_hostname = True
        # A bundle that does not load leaves an empty pool: every handshake fails as unknown authority.
        with contextlib.suppress(ssl.SSLError, ValueError):
            context.load_verify_locations(cadata=config.ca_bundle.decode("ascii", "replace"))
    if config.client_cert and config.client_key:
        _load_client_certificate(context, config.client_cert, config.client_key)
    context.set_alpn_protocols(["http/1.1"])
    return context


def _load_client_certificate(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """ssl loads a certificate chain from files only: the PEMs go through a private temporary file, removed at
    once."""
    import os
    import tempfile

    fd, name = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(cert.rstrip(b"\n") + b"\n" + key)
        context.load_cert_chain(name)
    finally:
        os.unlink(name)


def _tls_reason(err: BaseException) -> str:
    text = str(err)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        if "Hostname mismatch" in text or "IP address mismatch" in text:
            return "failed to verify certificate: x509: certificate is not valid for the requested name"
        return "failed to verify certificate: x509: certificate signed by unknown authority"
    return text
